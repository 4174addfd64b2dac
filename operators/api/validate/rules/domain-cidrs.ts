import { objectAt, stringAt, type WholeRule } from "../rule-context.ts";

export interface Cidr {
  network: number;
  prefix: number;
}

/** Parses "a.b.c.d/n"; undefined when malformed (the schema reports that). */
export function parseCidr(text: string): Cidr | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((o) => o > 255) || prefix > 32) return undefined;
  const address = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  return { network: Math.floor(address / size) * size, prefix };
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  const aEnd = a.network + 2 ** (32 - a.prefix);
  const bEnd = b.network + 2 ** (32 - b.prefix);
  return a.network < bEnd && b.network < aEnd;
}

/** Domains hand out virtual IPs from their CIDRs; two that overlap could give two pods one IP. */
export const domainCidrRules: WholeRule = {
  reads: ["Domain"],
  run: (ctx) => {
    const seen: { name: string; text: string; cidr: Cidr }[] = [];
    for (const domain of ctx.ofKind("Domain")) {
      const text = stringAt(objectAt(domain.object, "spec"), "cidr");
      const cidr = text === undefined ? undefined : parseCidr(text);
      if (!text || !cidr) continue;
      for (const other of seen) {
        if (cidrsOverlap(cidr, other.cidr)) {
          ctx.report(
            domain,
            "/spec/cidr",
            "cross/cidr-overlap",
            `${text} overlaps ${other.text} of Domain "${other.name}"; Domains need disjoint address ranges`,
          );
        }
      }
      seen.push({ name: domain.name, text, cidr });
    }
  },
};
