// The webhook's TLS serving certificate, issued by a CA opened through lib/pki (the hub CA mounted
// read-only, or the webhook's own CA in its data directory) and renewed at two thirds of its life,
// without dropping connections: the server's secure context is swapped in place.
import type { Server } from "node:https";
import type { Clock } from "../../lib/clock.ts";
import { type CertificateAuthority, generateKeyPair, renewalTime } from "../../lib/pki/index.ts";

export interface ServingCert {
  key: string;
  cert: string;
  notBefore: number;
  notAfter: number;
}

export function issueServingCert(
  ca: CertificateAuthority,
  serverNames: string[],
  ttlMs: number,
): ServingCert {
  const pair = generateKeyPair();
  const issued = ca.issue({
    role: "webhook",
    name: serverNames[0] ?? "device-webhook",
    publicKey: pair.publicKeyPem,
    ttlMs,
    serverNames,
  });
  return {
    key: pair.privateKeyPem,
    cert: issued.certPem,
    notBefore: issued.notBefore,
    notAfter: issued.notAfter,
  };
}

/** Reissues before expiry and installs the new certificate on `server`; returns the cancel. */
export function renewServingCert(
  server: Server,
  first: ServingCert,
  issue: () => ServingCert,
  clock: Clock,
  onError: (error: Error) => void,
): () => void {
  let timer = schedule(first);
  function schedule(current: ServingCert) {
    return clock.setTimeout(
      () => {
        try {
          const next = issue();
          server.setSecureContext({ key: next.key, cert: next.cert });
          timer = schedule(next);
        } catch (error) {
          onError(error as Error);
          // Try again in a minute rather than serve an expired certificate silently.
          timer = clock.setTimeout(() => (timer = schedule(current)), 60_000);
        }
      },
      Math.max(1_000, renewalTime(current.notBefore, current.notAfter) - clock.now()),
    );
  }
  return () => clock.clearTimeout(timer);
}
