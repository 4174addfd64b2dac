import { parseSealed, type SealKeyring, secretValueContext } from "../../../lib/seal/index.ts";
import { sealTargetOf } from "../../seal-target.ts";
import { escapePointer, objectAt, type SealCheck, stringAt, type WholeRule } from "../rule-context.ts";

/** The hub's check: the value opens with its keys for exactly this place. */
export function hubOpens(keys: Pick<SealKeyring, "unseal">): SealCheck {
  return (sealed, context, inspect) => {
    let plain: Buffer;
    try {
      plain = keys.unseal(sealed, context);
    } catch (error) {
      return `does not open on this hub: ${(error as Error).message}`;
    }
    inspect?.(plain);
    return undefined;
  };
}

/** CI's check without the private key: the value is sealed to one of the hub's key ids. */
export function keyIdAmong(keyIds: readonly string[]): SealCheck {
  return (sealed) => {
    const { kid } = parseSealed(sealed);
    return keyIds.includes(kid)
      ? undefined
      : `is sealed to key ${kid}, which is not one of the hub's (${keyIds.join(", ")}): seal it again with \`rlark seal\``;
  };
}

/** Said with a value sealed for another place: how to make one that opens here. */
const RESEAL_HINT =
  "a value opens only for the clusters (metadata.namespace agent-<cluster>, or spec.clusterSelector), namespace, name and key it was sealed for: seal it again for this one (`rlark seal --secret`), or, sealed by an older rlark that named no cluster, `rlark seal --reseal FILE`";

/**
 * Each sealed value is well formed (the schema checks the characters; this the structure) and,
 * with a check, one the hub can open for this Secret's clusters, namespace, name and key: a
 * value copied from another Secret or key, or moved to another cluster, is refused before it
 * reaches the store.
 */
export const sealedSecretRules: WholeRule = {
  reads: ["SealedSecret"],
  uses: (ctx) => [ctx.sealCheck],
  run: (ctx) => {
    for (const sealed of ctx.ofKind("SealedSecret")) {
      const spec = objectAt(sealed.object, "spec");
      const namespace = stringAt(spec, "namespace") ?? "";
      const target = sealTargetOf(sealed.namespace, spec?.clusterSelector);
      for (const [key, value] of Object.entries(objectAt(spec, "encryptedData") ?? {})) {
        if (typeof value !== "string") continue;
        const pointer = `/spec/encryptedData/${escapePointer(key)}`;
        let problem: string | undefined;
        try {
          parseSealed(value);
        } catch (error) {
          problem = `is malformed: ${(error as Error).message}`;
        }
        if (problem === undefined) {
          const opens = ctx.sealCheck?.(value, secretValueContext(target, namespace, sealed.name, key));
          if (opens) problem = opens.includes("does not open for") ? `${opens}: ${RESEAL_HINT}` : opens;
        }
        if (problem)
          ctx.report(sealed, pointer, "cross/sealed-value", `the sealed value of "${key}" ${problem}`);
      }
    }
  },
};
