// The hub's SSH offer, seen by the real OpenSSH client: its default offer lands on aes128-gcm
// (the fastest suite ssh2 runs, hack/bench/access/hops.ts), and a client insisting on a suite
// the hub does not offer is refused at the key exchange, before any login.
import t from "tap";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml, run } from "./bastion-fixture.ts";

t.test("cipher suites", async (t) => {
  const { hub } = await startHubOnGit(t, { files: { "cluster.yaml": clusterYaml } });
  const port = hub.sshAddress.split(":")[1] as string;
  const ssh = (...options: string[]) =>
    run("ssh", [
      ...["-F", "/dev/null", "-v", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"],
      ...["-o", "UserKnownHostsFile=/dev/null", "-o", "PubkeyAuthentication=no", "-p", port],
      ...options,
      "nobody@127.0.0.1",
      "true",
    ]);

  await t.test("OpenSSH's default offer negotiates aes128-gcm both ways", async (t) => {
    const result = await ssh();
    t.match(result.stderr, /kex: server->client cipher: aes128-gcm@openssh\.com/);
    t.match(result.stderr, /kex: client->server cipher: aes128-gcm@openssh\.com/);
    t.match(result.stderr, /Permission denied/, "and no login without a key");
  });

  for (const cipher of ["aes128-ctr", "aes256-ctr", "chacha20-poly1305@openssh.com", "aes128-cbc"]) {
    await t.test(`${cipher} alone is refused`, async (t) => {
      const result = await ssh("-c", cipher);
      t.equal(result.code, 255);
      t.match(result.stderr, /no matching cipher found/);
    });
  }

  await t.test("aes256-gcm is served", async (t) => {
    const result = await ssh("-c", "aes256-gcm@openssh.com");
    t.match(result.stderr, /kex: server->client cipher: aes256-gcm@openssh\.com/);
  });
});
