/**
 * When to renew a certificate: at two thirds of its lifetime, moved by up to ±10 % of the
 * lifetime so agents enrolled together do not all renew in the same second.
 */
export function renewalTime(notBefore: number, notAfter: number, random: () => number = Math.random): number {
  const lifetime = Math.max(0, notAfter - notBefore);
  const jitter = (random() * 2 - 1) * 0.1 * lifetime;
  return Math.round(notBefore + (lifetime * 2) / 3 + jitter);
}
