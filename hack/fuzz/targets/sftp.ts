// SFTP requests from a user through the bastion: the agent's filter reads each packet and judges
// the paths it names against the pod's root (checkRequest, then insideNamed as for a container).
import fc from "fast-check";
import { checkRequest, insideNamed, type PolicyOptions } from "../../../operators/agent/index.ts";
import { clearly, type FuzzTarget } from "../target.ts";

const ROOT = "/workspace";
const options: PolicyOptions = {
  place: ROOT,
  inside: (path, _follow, named) => insideNamed(ROOT, path, named),
  maxFileBytes: 1 << 20,
};

/** An SFTP string: uint32 length, then bytes (sometimes a lying length). */
const sftpString = fc
  .tuple(
    fc.oneof(
      fc.constantFrom(
        "/workspace/a",
        "../etc/passwd",
        "~/x",
        "/",
        "a/../../b",
        "expand-path@openssh.com",
        "posix-rename@openssh.com",
        "hardlink@openssh.com",
        "statvfs@openssh.com",
      ),
      fc.string({ maxLength: 40 }),
      fc.string({ unit: "binary", maxLength: 40 }),
    ),
    fc.oneof({ weight: 5, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat() }),
  )
  .map(([text, lie]) => {
    const bytes = Buffer.from(text);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(lie >= 0 ? lie % 0x1_0000_0000 : bytes.length);
    return Buffer.concat([length, bytes]);
  });
const packet = fc.oneof(
  fc
    .tuple(
      fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constant(200), fc.integer({ min: 0, max: 255 })),
      fc.nat(),
      fc.array(
        fc.oneof(
          sftpString,
          fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map((n) => {
            const b = Buffer.alloc(8);
            b.writeBigUInt64BE(n);
            return b;
          }),
        ),
        { maxLength: 4 },
      ),
    )
    .map(([type, id, fields]) => {
      const head = Buffer.alloc(5);
      head[0] = type;
      head.writeUInt32BE(id % 0x1_0000_0000, 1);
      return Buffer.concat([head, ...fields]);
    }),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
);

export const sftpRequests: FuzzTarget<Buffer> = {
  name: "sftp-path-filter",
  about: "SFTP packets from users: agent/runtimes/shared/sftp-policy.ts checkRequest + insideNamed",
  input: packet,
  async run(p) {
    const verdict = await clearly(() => checkRequest(p, options));
    if (verdict && "paths" in verdict) {
      for (const { path, named } of verdict.paths) await clearly(() => insideNamed(ROOT, path, named));
    }
  },
};
