import { parseSshPublicKey } from "../../ssh-public-key.ts";
import { arrayAt, type ManifestObject, objectAt, type WholeRule } from "../rule-context.ts";

/**
 * Every key of a User parses, and no key is on two Users (seed 000 §20's 409): the bastion
 * finds the User by login name and then checks the key, so a shared key would let each log in
 * as the other. A key listed twice under one User (comments differing) is reported too.
 */
export const sshKeyRules: WholeRule = {
  reads: ["User"],
  run: (ctx) => {
    // Where the first holder lists a key is worked out only for a duplicate: locating every key of
    // 10,000 Users would read each of their files again.
    const seen = new Map<string, { user: ManifestObject; pointer: string }>();
    for (const user of ctx.ofKind("User")) {
      arrayAt(objectAt(user.object, "spec"), "sshPublicKeys").forEach((line, i) => {
        if (typeof line !== "string") return;
        const pointer = `/spec/sshPublicKeys/${i}`;
        const key = parseSshPublicKey(line);
        if ("error" in key) {
          ctx.report(
            user,
            pointer,
            "cross/ssh-key-invalid",
            `this SSH public key does not parse: ${key.error}`,
          );
          return;
        }
        const first = seen.get(key.fingerprint);
        if (first) {
          const owner = first.user === user ? "this User" : `User "${first.user.name}"`;
          const where = `${first.user.document.file}:${first.user.document.locate(first.pointer).line}`;
          ctx.report(
            user,
            pointer,
            "cross/ssh-key-duplicate",
            `the SSH key ${key.fingerprint} is already listed for ${owner} at ${where}; a key belongs to one User`,
          );
          return;
        }
        seen.set(key.fingerprint, { user, pointer });
      });
    }
  },
};
