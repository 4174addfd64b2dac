// What of a SealedSecret may be shown where people read manifests (the pull-request plan): sealed
// values as they are, anything else in their place (a plain value committed by mistake) hidden.

const SEALED = /^rlark-sealed:v1:[0-9a-f]{16}:[A-Za-z0-9_-]+$/;
export const HIDDEN_VALUE = "(not shown: not a sealed value)";

/** `spec` with every encryptedData value that is not a sealed string replaced by HIDDEN_VALUE. */
export function shownSealedSecretSpec(spec: unknown): unknown {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return spec;
  const data = (spec as { encryptedData?: unknown }).encryptedData;
  if (typeof data !== "object" || data === null || Array.isArray(data)) return spec;
  const shown = Object.fromEntries(
    Object.entries(data).map(([key, value]) => [
      key,
      typeof value === "string" && SEALED.test(value) ? value : HIDDEN_VALUE,
    ]),
  );
  return { ...spec, encryptedData: shown };
}
