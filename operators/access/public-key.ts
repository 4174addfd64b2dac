/** The wire-format blob of an OpenSSH public key line (`<type> <base64> [comment]`), or undefined. */
export function publicKeyBlob(line: string): Buffer | undefined {
  const [type, base64] = line.trim().split(/\s+/);
  if (!type || !base64) return undefined;
  const blob = Buffer.from(base64, "base64");
  if (blob.length < 4) return undefined;
  const length = blob.readUInt32BE(0);
  // The blob names its own type: a line whose label and blob disagree is not a key.
  if (blob.subarray(4, 4 + length).toString("latin1") !== type) return undefined;
  return blob;
}
