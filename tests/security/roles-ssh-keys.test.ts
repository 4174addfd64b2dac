// SSH keys of Users (seed 000 §20). The bastion finds the User by the login's name and then
// checks the key, so one key on two Users would let each log in as the other: the attack is a
// repository where bob lists alice's key (with a comment of his own), and keys that look like
// keys but are not. `rlark validate` refuses them naming the file and line of each, and of the
// first owner of a shared key; the fingerprints `rlark user keys` and the hub's API show are the
// ones the real `ssh-keygen -l` prints.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const dir = mkdtempSync(path.join(tmpdir(), "rlark-keys-"));
t.teardown(() => execFileSync("rm", ["-rf", dir]));

/** A fresh key pair: the public line and its fingerprint as ssh-keygen prints it. */
function keygen(name: string, type: string): { line: string; fingerprint: string } {
  const file = path.join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", `${name}@test`, "-f", file]);
  const line = readFileSync(`${file}.pub`, "utf8").trim();
  const fingerprint = execFileSync("ssh-keygen", ["-l", "-E", "sha256", "-f", `${file}.pub`], {
    encoding: "utf8",
  }).split(" ")[1] as string;
  return { line, fingerprint };
}

const userYaml = (name: string, keys: string[]) =>
  `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: ${name}\nspec:\n  roles: [user]\n  sshPublicKeys:\n${keys.map((k) => `    - "${k}"\n`).join("")}`;

const alice = keygen("alice", "ed25519");
const bob = keygen("bob", "ecdsa");
const carol = keygen("carol", "rsa");

t.test("a key on two Users, or one that does not parse, is refused with file and line", async (t) => {
  const repo = path.join(dir, "repo");
  mkdirSync(path.join(repo, "users"), { recursive: true });
  const [, aliceBlob] = alice.line.split(" ") as [string, string];
  writeFileSync(path.join(repo, "users", "alice.yaml"), userYaml("alice", [alice.line]));
  // line 8: bob's own key; line 9: alice's, under bob's comment
  writeFileSync(
    path.join(repo, "users", "bob.yaml"),
    userYaml("bob", [bob.line, `ssh-ed25519 ${aliceBlob} bob@elsewhere`]),
  );
  writeFileSync(
    path.join(repo, "users", "eve.yaml"),
    userYaml("eve", [
      `ssh-ed25519 ${aliceBlob.slice(0, 40)} cut short`, // line 8: the blob ends inside the key
      `ssh-rsa ${aliceBlob} mislabelled`, // line 9: an ed25519 blob called RSA
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA not-base64-all-the-way", // line 10
    ]),
  );

  const result = await rlark(["validate", "users"], { cwd: repo });
  t.equal(result.code, 1, result.stdout);
  t.match(
    result.stdout,
    `users/bob.yaml:9:7 User bob /spec/sshPublicKeys/1: the SSH key ${alice.fingerprint} is already listed for User "alice" at users/alice.yaml:8; a key belongs to one User [cross/ssh-key-duplicate]`,
  );
  t.notMatch(result.stdout, /users\/bob\.yaml:8/, "bob's own key is fine");
  for (const line of [8, 9, 10])
    t.match(
      result.stdout,
      new RegExp(
        `users/eve\\.yaml:${line}:\\d+ User eve /spec/sshPublicKeys/${line - 8}: this SSH public key does not parse: .+ \\[cross/ssh-key-invalid\\]`,
      ),
      `eve's key on line ${line} refused where it is written`,
    );
  t.match(result.stdout, /the line says ssh-rsa but its blob is a ssh-ed25519 key/);

  const keys = await rlark(["user", "keys", "users"], { cwd: repo });
  t.equal(keys.code, 1, "the shared and broken keys fail the listing too");
  t.match(keys.stderr, /users\/bob\.yaml:9:7 .*\[cross\/ssh-key-duplicate\]/);
  t.match(keys.stdout, `alice\t${alice.fingerprint}\tssh-ed25519\talice@test\tusers/alice.yaml:8\n`);
  t.match(keys.stdout, `bob\t${bob.fingerprint}\tecdsa-sha2-nistp256\tbob@test\tusers/bob.yaml:8\n`);
});

t.test("the hub's API shows each User's keys with their fingerprints", async (t) => {
  const { hub } = await startHubOnGit(t, {
    files: {
      "users/alice.yaml": userYaml("alice", [alice.line, carol.line]),
      "users/bob.yaml": userYaml("bob", [bob.line]),
    },
  });
  const get = async (name: string) => {
    const r = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/users/${name}`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    return r.status === 200 ? ((await r.json()) as { status: { sshPublicKeys: unknown[] } }) : undefined;
  };
  const shown = await waitFor("alice served", () => get("alice"), onRealServers);
  t.same(shown.status.sshPublicKeys, [
    { fingerprint: alice.fingerprint, type: "ssh-ed25519", comment: "alice@test" },
    { fingerprint: carol.fingerprint, type: "ssh-rsa", comment: "carol@test" },
  ]);
  t.same((await get("bob"))?.status.sshPublicKeys, [
    { fingerprint: bob.fingerprint, type: "ecdsa-sha2-nistp256", comment: "bob@test" },
  ]);
});
