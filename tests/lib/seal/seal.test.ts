import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import t from "tap";
import {
  clusterKubeconfigContext,
  parseSealed,
  publicKeyPemId,
  SEALED_PREFIX,
  SealError,
  SealKeyring,
  sealedKeyId,
  sealValue,
  secretValueContext,
  unboundSecretContext,
} from "../../../operators/lib/seal/index.ts";

const keyDir = async (): Promise<string> => join(await mkdtemp(join(tmpdir(), "rlark-seal-")), "seal");

function sealErrorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof SealError) return err.message;
    throw err;
  }
  throw new Error("expected a SealError, nothing was thrown");
}

t.test("a value sealed to the hub's key opens with the same context", async (t) => {
  const ring = await SealKeyring.open(await keyDir());
  const context = secretValueContext({ cluster: "gpu-a" }, "ml", "registry", "password");
  t.equal(context, "cluster/gpu-a/secret/ml/registry/password");
  const sealed = sealValue("hunter2", ring.currentPublicKeyPem(), context);
  t.match(sealed, /^rlark-sealed:v1:[0-9a-f]{16}:[A-Za-z0-9_-]+$/);
  t.equal(sealedKeyId(sealed), ring.currentKeyId());
  t.equal(publicKeyPemId(ring.currentPublicKeyPem()), ring.currentKeyId());
  t.notOk(sealed.includes("hunter2"));
  t.equal(ring.unseal(sealed, context).toString("utf8"), "hunter2");
  const bytes = Uint8Array.from([0, 255, 1, 128]);
  t.same([...ring.unseal(sealValue(bytes, ring.currentPublicKeyPem(), "c"), "c")], [...bytes]);
  t.equal(ring.unseal(sealValue("", ring.currentPublicKeyPem(), "c"), "c").length, 0, "empty values too");
  t.not(sealValue("x", ring.currentPublicKeyPem(), "c"), sealValue("x", ring.currentPublicKeyPem(), "c"));
});

t.test("a sealed value copied to another object, key or cluster does not open", async (t) => {
  const ring = await SealKeyring.open(await keyDir());
  const lab = { cluster: "lab" };
  const sealed = sealValue(
    "s3cret",
    ring.currentPublicKeyPem(),
    secretValueContext(lab, "ml", "db", "password"),
  );
  for (const other of [
    secretValueContext(lab, "ml", "db", "user"),
    secretValueContext(lab, "ml", "web", "password"),
    secretValueContext(lab, "prod", "db", "password"),
    secretValueContext({ cluster: "beijing" }, "ml", "db", "password"),
    secretValueContext({ clusterSelector: { matchLabels: { env: "lab" } } }, "ml", "db", "password"),
    unboundSecretContext(secretValueContext(lab, "ml", "db", "password")) as string,
    clusterKubeconfigContext("db"),
  ]) {
    const message = sealErrorOf(() => ring.unseal(sealed, other));
    t.match(message, /does not open/, other);
    t.notOk(message.includes("s3cret"));
  }
  t.equal(clusterKubeconfigContext("gpu-a"), "cluster/gpu-a/kubeconfig");
});

t.test("a selector's context is one string however the selector is written", async (t) => {
  const one = secretValueContext(
    { clusterSelector: { matchLabels: { env: "lab", "rlinf.io/gpu": "a100" } } },
    "ml",
    "db",
    "k",
  );
  t.equal(one, 'clusters/{"matchLabels":{"env":"lab","rlinf.io/gpu":"a100"}}/secret/ml/db/k');
  t.equal(
    secretValueContext(
      { clusterSelector: { matchLabels: { "rlinf.io/gpu": "a100", env: "lab" } } },
      "ml",
      "db",
      "k",
    ),
    one,
  );
  t.equal(unboundSecretContext(one), "secret/ml/db/k", "read from its end: the selector may hold a /");
  t.equal(unboundSecretContext(clusterKubeconfigContext("lab")), undefined);
});

t.test("a tampered, truncated or re-addressed sealed value fails with a SealError", async (t) => {
  const ring = await SealKeyring.open(await keyDir());
  const other = await SealKeyring.open(await keyDir());
  const sealed = sealValue("payload-value", ring.currentPublicKeyPem(), "ctx");
  const { kid } = parseSealed(sealed);
  const payload = sealed.slice(`${SEALED_PREFIX}${kid}:`.length);
  const bytes = Buffer.from(payload, "base64url");
  const flipped = (i: number): string => {
    const copy = Buffer.from(bytes);
    copy[i] = (copy[i] ?? 0) ^ 1;
    return `${SEALED_PREFIX}${kid}:${copy.toString("base64url")}`;
  };
  t.match(
    sealErrorOf(() => ring.unseal(flipped(0), "ctx")),
    /invalid ephemeral key|does not open/,
    "ephemeral key",
  );
  t.match(
    sealErrorOf(() => ring.unseal(flipped(35), "ctx")),
    /does not open/,
    "iv",
  );
  t.match(
    sealErrorOf(() => ring.unseal(flipped(50), "ctx")),
    /does not open/,
    "ciphertext",
  );
  t.match(
    sealErrorOf(() => ring.unseal(flipped(bytes.length - 1), "ctx")),
    /does not open/,
    "tag",
  );
  const short = `${SEALED_PREFIX}${kid}:${bytes.subarray(0, 40).toString("base64url")}`;
  t.match(
    sealErrorOf(() => ring.unseal(short, "ctx")),
    /truncated/,
  );
  const dropTag = `${SEALED_PREFIX}${kid}:${bytes.subarray(0, bytes.length - 1).toString("base64url")}`;
  t.match(
    sealErrorOf(() => ring.unseal(dropTag, "ctx")),
    /does not open/,
  );
  t.match(
    sealErrorOf(() => ring.unseal(`${SEALED_PREFIX}0123456789abcdef:${payload}`, "ctx")),
    /does not hold/,
  );
  const readdressed = `${SEALED_PREFIX}${other.currentKeyId()}:${payload}`;
  t.match(
    sealErrorOf(() => other.unseal(readdressed, "ctx")),
    /does not open/,
    "another hub's kid",
  );
  t.match(
    sealErrorOf(() => ring.unseal("hunter2", "ctx")),
    /prefix/,
  );
  t.match(
    sealErrorOf(() => ring.unseal(`${SEALED_PREFIX}XYZ:${payload}`, "ctx")),
    /key id/,
  );
  t.match(
    sealErrorOf(() => ring.unseal(`${SEALED_PREFIX}${kid}:${payload}=`, "ctx")),
    /base64url/,
  );
  t.match(
    sealErrorOf(() => ring.unseal(`${SEALED_PREFIX}${kid}:${"A".repeat(2_000_000)}`, "ctx")),
    /longer/,
  );
});

t.test("sealing refuses keys that are not X25519, an empty context and oversized values", async (t) => {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({
    type: "spki",
    format: "pem",
  });
  t.match(
    sealErrorOf(() => sealValue("x", rsa.toString(), "c")),
    /X25519, this key is rsa/,
  );
  t.match(
    sealErrorOf(() => sealValue("x", "not a pem", "c")),
    /not a public key/,
  );
  const ring = await SealKeyring.open(await keyDir());
  t.match(
    sealErrorOf(() => sealValue("x", ring.currentPublicKeyPem(), "")),
    /context/,
  );
  t.match(
    sealErrorOf(() => sealValue(new Uint8Array(1024 * 1024 + 1), ring.currentPublicKeyPem(), "c")),
    /larger/,
  );
});

t.test("the key directory is 0700 with 0600 keys, and a second open loads the same key", async (t) => {
  const dir = await keyDir();
  const ring = await SealKeyring.open(dir);
  t.equal(statSync(dir).mode & 0o777, 0o700);
  const files = readdirSync(dir).sort();
  t.same(files, [`${ring.currentKeyId()}.key`, "current"].sort());
  for (const file of files) t.equal(statSync(join(dir, file)).mode & 0o777, 0o600, file);
  t.match(readFileSync(join(dir, `${ring.currentKeyId()}.key`), "utf8"), /BEGIN PRIVATE KEY/);
  const again = await SealKeyring.open(dir);
  t.equal(again.currentKeyId(), ring.currentKeyId());
  t.equal(again.currentPublicKeyPem(), ring.currentPublicKeyPem());
});

t.test(
  "after rotate, old values still open (also after a restart) and new seals use the new key",
  async (t) => {
    const dir = await keyDir();
    const ring = await SealKeyring.open(dir);
    const oldKid = ring.currentKeyId();
    const old = sealValue("before", ring.currentPublicKeyPem(), "c");
    const newKid = await ring.rotate();
    t.not(newKid, oldKid);
    t.equal(ring.currentKeyId(), newKid);
    t.same(ring.keyIds(), [newKid, oldKid]);
    t.equal(ring.unseal(old, "c").toString(), "before");
    const fresh = sealValue("after", ring.currentPublicKeyPem(), "c");
    t.equal(sealedKeyId(fresh), newKid);
    const restarted = await SealKeyring.open(dir);
    t.equal(restarted.currentKeyId(), newKid);
    t.equal(restarted.unseal(old, "c").toString(), "before");
    t.equal(restarted.unseal(fresh, "c").toString(), "after");
    t.equal(statSync(join(dir, `${newKid}.key`)).mode & 0o777, 0o600);
  },
);

t.test("a key file whose name does not match its key, or a dangling `current`, stops the open", async (t) => {
  const dir = await keyDir();
  const ring = await SealKeyring.open(dir);
  writeFileSync(join(dir, "current"), "0000000000000000\n");
  await t.rejects(SealKeyring.open(dir), /names key 0000000000000000/);
  writeFileSync(join(dir, "current"), `${ring.currentKeyId()}\n`);
  writeFileSync(join(dir, "1111111111111111.key"), readFileSync(join(dir, `${ring.currentKeyId()}.key`)));
  await t.rejects(SealKeyring.open(dir), /not the key its name says/);
});

t.test("property: any bytes round-trip under any context, and open under no other context", async (t) => {
  const ring = await SealKeyring.open(await keyDir());
  const pem = ring.currentPublicKeyPem();
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 512 }),
      fc.string({ minLength: 1, maxLength: 80 }),
      fc.string({ minLength: 1, maxLength: 80 }),
      (plain, context, other) => {
        const sealed = sealValue(plain, pem, context);
        if (!Buffer.from(plain).equals(ring.unseal(sealed, context))) return false;
        if (other === context) return true;
        return sealErrorOf(() => ring.unseal(sealed, other)).includes("does not open");
      },
    ),
    { numRuns: 200 },
  );
  t.pass("held");
});

t.test("a read-only key directory (a Secret volume) is loaded as it is, and cannot be rotated", async (t) => {
  const dir = await keyDir();
  const ring = await SealKeyring.open(dir);
  const sealed = sealValue("ro", ring.currentPublicKeyPem(), "c");
  chmodSync(join(dir, `${ring.currentKeyId()}.key`), 0o644);
  // A read-only bind mount of the directory in a mount namespace of its own: gone with the process.
  const check = `
    const { SealKeyring } = await import(${JSON.stringify(new URL("../../../operators/lib/seal/index.ts", import.meta.url).href)});
    const ring = await SealKeyring.open(process.argv[1]);
    const opened = ring.unseal(process.argv[2], "c").toString();
    const rotation = await ring.rotate().then(() => "rotated", (error) => error.code);
    process.stdout.write(JSON.stringify({ opened, rotation, kid: ring.currentKeyId() }));
  `;
  const { stdout } = await promisify(execFile)("unshare", [
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && exec "$2" --input-type=module -e "$3" "$1" "$4"',
    "sh",
    dir,
    process.execPath,
    check,
    sealed,
  ]);
  t.same(JSON.parse(stdout), { opened: "ro", rotation: "EROFS", kid: ring.currentKeyId() });
  t.equal(
    statSync(join(dir, `${ring.currentKeyId()}.key`)).mode & 0o777,
    0o644,
    "its modes were left as mounted",
  );
});
