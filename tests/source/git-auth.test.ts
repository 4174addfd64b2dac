import { spawn } from "node:child_process";
import { timingSafeEqual } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ssh2 from "ssh2";
import t, { type Test } from "tap";
import {
  createGitRepository,
  loadGitCredentials,
  prepareGitAuth,
  repoKey,
  scrubUrl,
} from "../../operators/source/index.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { rlark } from "../helpers/rlark-cli.ts";

t.test("scrubUrl drops http userinfo but keeps the harmless ssh user", async (t) => {
  t.equal(scrubUrl("https://user:tok@github.com/o/r.git"), "https://github.com/o/r.git");
  t.equal(scrubUrl("https://ghp_abc@github.com/o/r.git"), "https://github.com/o/r.git");
  t.equal(scrubUrl("ssh://git@gitea.example.com:2222/o/r.git"), "ssh://git@gitea.example.com:2222/o/r.git");
  t.equal(scrubUrl("git@github.com:o/r.git"), "git@github.com:o/r.git");
  t.equal(scrubUrl("/srv/git/r.git"), "/srv/git/r.git");
});

t.test("the same repository gets the same directory with or without credentials in its URL", async (t) => {
  t.equal(repoKey("https://user:tok@github.com/o/r.git"), repoKey("https://github.com/o/r.git"));
  t.not(repoKey("https://github.com/o/r.git"), repoKey("https://github.com/o/other.git"));
});

t.test("redact removes tokens, their Basic encoding and URL userinfo from any text", async (t) => {
  const dataDir = t.testdir();
  const auth = await prepareGitAuth({
    url: "https://alice:pa55word-token@git.example.com/o/r.git",
    dataDir,
  });
  t.equal(auth.remoteUrl, "https://git.example.com/o/r.git", "git is given no credentials in the URL");
  t.equal(auth.displayUrl, "https://git.example.com/o/r.git");
  t.equal(
    auth.env.GIT_CONFIG_KEY_0,
    "http.https://git.example.com/.extraHeader",
    "the header goes to that origin only",
  );
  const basic = Buffer.from("alice:pa55word-token").toString("base64");
  t.equal(auth.env.GIT_CONFIG_VALUE_0, `Authorization: Basic ${basic}`);
  const text = `fatal: unable to access 'https://alice:pa55word-token@git.example.com/': 403 for pa55word-token ${basic}`;
  const clean = auth.redact(text);
  t.notMatch(clean, /pa55word-token/);
  t.notMatch(clean, basic);
  t.notMatch(clean, /alice:/);
  t.match(clean, /https:\/\/git\.example\.com\//);
});

t.test("credentials load from a token file, else RLARK_GIT_TOKEN", async (t) => {
  const dir = t.testdir();
  const file = join(dir, "token");
  await writeFile(file, "  from-file\n");
  t.same(await loadGitCredentials({ tokenFile: file, env: { RLARK_GIT_TOKEN: "from-env" } }), {
    token: "from-file",
  });
  t.same(await loadGitCredentials({ env: { RLARK_GIT_TOKEN: "from-env" } }), { token: "from-env" });
  t.same(await loadGitCredentials({ sshKeyFile: "/k", env: {} }), { sshKeyFile: "/k" });
});

/** An ed25519 key pair that ssh2 reads back: its own parser refuses about one in 200 it generates. */
function ed25519KeyPair() {
  for (let attempt = 0; attempt < 10; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519");
    if (!(ssh2.utils.parseKey(pair.private) instanceof Error)) return pair;
  }
  throw new Error("ssh2 could not read back any of 10 ed25519 keys it generated");
}

/** A real SSH git server (ssh2) that accepts one public key and runs git-upload-pack. */
async function sshGitServer(t: Test, root: string) {
  const hostKey = ed25519KeyPair();
  const clientKey = ed25519KeyPair();
  const allowed = ssh2.utils.parseKey(clientKey.public);
  if (allowed instanceof Error) throw allowed;
  const accepted: string[] = [];
  const server = new ssh2.Server({ hostKeys: [hostKey.private] }, (client) => {
    client.on("authentication", (ctx) => {
      if (
        ctx.method === "publickey" &&
        ctx.key.algo === allowed.type &&
        ctx.key.data.length === allowed.getPublicSSH().length &&
        timingSafeEqual(ctx.key.data, allowed.getPublicSSH()) &&
        (!ctx.signature || allowed.verify(ctx.blob ?? Buffer.alloc(0), ctx.signature, ctx.hashAlgo))
      ) {
        if (ctx.signature) accepted.push(ctx.username);
        ctx.accept();
      } else ctx.reject(["publickey"]);
    });
    client.on("ready", () => {
      client.on("session", (acceptSession) => {
        const session = acceptSession();
        session.on("env", (accept) => accept?.());
        session.on("exec", (accept, reject, info) => {
          const match = /^git[ -]upload-pack '([^']+)'$/.exec(info.command);
          if (!match?.[1]) return reject();
          const stream = accept();
          const child = spawn("git-upload-pack", [join(root, match[1])]);
          stream.pipe(child.stdin);
          // Not ended by the pipes: the exit status must go out before the channel closes.
          child.stdout.pipe(stream, { end: false });
          child.stderr.pipe(stream.stderr, { end: false });
          child.on("close", (code) => {
            stream.exit(code ?? 1);
            stream.end();
          });
        });
      });
    });
    client.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return {
    port: (server.address() as AddressInfo).port,
    clientKey: clientKey.private,
    hostKey: hostKey.public,
    accepted,
  };
}

/**
 * One commit in o/r.git, served over SSH; the deploy key the server accepts written with `keyMode`,
 * and a data dir for the hub's copy of it. All removed when the test ends.
 */
async function repositoryOverSsh(t: Test, keyMode: number) {
  const git = await createGitServer({ name: "o/r.git" });
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(async () => {
    await git.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const sha = await git.commit({ "a.yaml": "a: 1\n" });
  const ssh = await sshGitServer(t, join(git.root, "srv"));
  const keyFile = join(git.root, "deploy-key");
  await writeFile(keyFile, ssh.clientKey, { mode: keyMode });
  return { git, dataDir, sha, ssh, keyFile, url: `ssh://git@127.0.0.1:${ssh.port}/o/r.git` };
}

t.test("an SSH deploy key is used from a 0600 copy in the data dir, and never shown", async (t) => {
  // Readable by others: the hub copies it to a private file rather than refusing it.
  const { git, dataDir, sha, ssh, keyFile, url } = await repositoryOverSsh(t, 0o644);

  const repo = createGitRepository({ url, branch: "main", dataDir, credentials: { sshKeyFile: keyFile } });
  t.equal(await repo.fetch(), sha, "fetched over SSH with the deploy key");
  t.same(ssh.accepted, ["git"]);
  const copy = join(dataDir, "git", "keys", `${repoKey(url)}.key`);
  t.equal((await stat(copy)).mode & 0o777, 0o600, "the key copy is private");
  t.match(
    await readFile(join(dataDir, "git", "known_hosts"), "utf8"),
    /ssh-ed25519/,
    "the host key is pinned",
  );

  const wrongKey = join(git.root, "wrong-key");
  const wrong = ssh2.utils.generateKeyPairSync("ed25519").private;
  await writeFile(wrongKey, wrong, { mode: 0o600 });
  const other = createGitRepository({
    url,
    branch: "main",
    dataDir: join(dataDir, "other"),
    credentials: { sshKeyFile: wrongKey },
  });
  const error = await other.fetch().then(
    () => "",
    (e: Error) => e.message,
  );
  t.match(error, /git fetch of branch main from ssh:\/\/git@127\.0\.0\.1/);
  t.match(error, /Permission denied \(publickey\)/, "the error says what went wrong");
  t.notMatch(error, /PRIVATE KEY/);
  t.notOk(existsSync(join(dataDir, "git", "keys", "wrong-key")));
});

t.test(
  "--git-known-hosts-file pins the host key strictly: another key, or none listed, is refused",
  async (t) => {
    const { git, dataDir, sha, ssh, keyFile, url } = await repositoryOverSsh(t, 0o600);
    const hostLine = (key: string) =>
      `[127.0.0.1]:${ssh.port} ${key.trim().split(" ").slice(0, 2).join(" ")}\n`;
    const fetchWith = async (knownHosts: string, name: string) => {
      const file = join(git.root, `${name}_known_hosts`);
      await writeFile(file, knownHosts);
      const credentials = await loadGitCredentials({ sshKeyFile: keyFile, knownHostsFile: file, env: {} });
      const repo = createGitRepository({ url, branch: "main", dataDir: join(dataDir, name), credentials });
      const outcome = await repo.fetch().then(
        (fetched) => ({ fetched, error: "" }),
        (e: Error) => ({ fetched: "", error: e.message }),
      );
      return { ...outcome, file, after: await readFile(file, "utf8") };
    };

    const pinned = await fetchWith(hostLine(ssh.hostKey), "pinned");
    t.equal(pinned.fetched, sha, "the pinned host key is accepted");
    t.equal(pinned.after, hostLine(ssh.hostKey), "the file is not written");

    const impostor = await fetchWith(hostLine(ssh2.utils.generateKeyPairSync("ed25519").public), "other");
    t.equal(impostor.fetched, "");
    t.match(impostor.error, /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);

    const unlisted = await fetchWith("", "empty");
    t.equal(unlisted.fetched, "", "a host the file does not list is not trusted on first use");
    t.match(unlisted.error, /Host key verification failed/);
    t.equal(unlisted.after, "", "nor added to the file");
    t.notOk(existsSync(join(dataDir, "empty", "git", "known_hosts")), "nor pinned anywhere else");

    await t.rejects(
      loadGitCredentials({ knownHostsFile: join(git.root, "missing"), env: {} }),
      /--git-known-hosts-file .*missing: no such file/,
    );
  },
);

t.test("rlark hub and rlark up take --git-known-hosts-file and name it when it cannot be read", async (t) => {
  const dir = t.testdir();
  for (const command of ["hub", "up"]) {
    const run = await rlark([
      command,
      "--repo",
      "ssh://git@127.0.0.1:1/o/r.git",
      "--data-dir",
      join(dir, command),
      "--http",
      "127.0.0.1:0",
      "--ssh",
      "127.0.0.1:0",
      "--git-known-hosts-file",
      join(dir, "absent_known_hosts"),
    ]);
    t.not(run.code, 0, command);
    t.match(run.stderr, `--git-known-hosts-file ${join(dir, "absent_known_hosts")}: no such file`, command);
  }
});
