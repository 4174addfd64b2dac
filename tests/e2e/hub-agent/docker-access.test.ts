// Shell, exec, SFTP and ssh -L into a docker-runtime pod end to end: real OpenSSH through the
// hub's bastion, a hub on git with Users and an AccessPolicy, `rlark agent --runtime docker` as its
// own process on a real dockerd of the test's own. The agent reaches the container through the
// engine's exec API (sessions, and the container's own sftp-server) and its network namespace
// (forwards).
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import type { Hub } from "../../../operators/hub/hub.ts";
import {
  keygen,
  openSshArgs,
  policyYaml,
  run,
  sshForward,
  sshShell,
  userYaml,
} from "../../access/bastion-fixture.ts";
import { type Dockerd, startDockerd, TEST_IMAGE } from "../../helpers/dockerd.ts";
import { freePort } from "../../helpers/free-port.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../../operators/cli/main.ts");
const slow = { ...onRealServers, attempts: 1200 };
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const pod = "svc-main-0";

const cluster = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: edge
spec:
  runtime: docker
`;

const job = `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: svc
spec:
  tasks:
    - name: main
      role: Env
      agentType: Docker
      docker:
        image: ${TEST_IMAGE}
        command: ["sh", "-c"]
        args: ["echo in-the-container > /marker; printf 'echo hi; exit 3\\n' > /hi-then-3; mkdir -p /srv; httpd -p 127.0.0.1:8080 -h /srv; sleep 1000"]
        restartPolicy: Always
`;

function startAgentProcess(hub: Hub, engine: Dockerd, stateDir: string, token: string): ChildProcess {
  const args = [cli, "agent", "--hub", hub.sshAddress, "--state-dir", stateDir, "--runtime", "docker"];
  args.push("--docker-host", engine.host, "--node-name", "robot");
  args.push("--token", token, "--ca-hash", hub.caFingerprint);
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  child.stderr?.resume();
  return child;
}

t.test(
  "ssh shell and exec reach a docker pod through the bastion; a user without a grant is refused",
  async (t) => {
    const engine = await startDockerd(t);
    const dir = await mkdtemp(path.join(tmpdir(), "rlark-docker-access-"));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const alice = keygen(dir, "alice");
    const bob = keygen(dir, "bob");
    const { hub } = await startHubOnGit(t, {
      files: {
        "cluster.yaml": cluster,
        "svc.yaml": job,
        "users.yaml": [userYaml("alice", ["user"], [alice.line]), userYaml("bob", ["user"], [bob.line])].join(
          "---\n",
        ),
        "policies.yaml": policyYaml(
          "alice-edge",
          '  subjects:\n    users: [alice]\n  targets:\n    clusters: [edge]\n  verbs: [shell, exec, files, forward]\n  commands: ["sh /hi-then-3", "cat /marker", "cat /no-such-file", "no-such-program", "cat", "wc -c /srv/up.bin"]\n',
        ),
      },
    });
    await waitFor(
      "the cluster from git",
      async () => hub.store.get("Cluster", undefined, "edge"),
      onRealServers,
    );
    const { token } = await hub.pki.enrollment.createToken({ cluster: "edge", ttlMs: 60_000 });
    const agent = startAgentProcess(hub, engine, path.join(dir, "state"), token);
    t.teardown(() => agent.kill("SIGKILL"));
    await waitFor(
      "the pod running",
      async () => {
        const found = await hub.store.get("Pod", "agent-edge", pod);
        return (found?.status as { phase?: string } | undefined)?.phase === "Running";
      },
      slow,
    );

    const knownHosts = path.join(dir, "known_hosts");
    await writeFile(knownHosts, `${hub.knownHosts}\n`);
    const sshArgs = (key: string) => openSshArgs(knownHosts, key, hub.sshAddress.split(":")[1] as string);

    await t.test("exec gives the command's output and exit status", async (t) => {
      // exec takes no shell syntax: the container's script runs `echo hi; exit 3`
      const exec = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "sh /hi-then-3"]);
      t.equal(exec.stdout, "hi\n", exec.stderr);
      t.equal(exec.code, 3, "the command's exit status is ssh's");
      const marker = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "cat /marker"]);
      t.equal(marker.stdout, "in-the-container\n", "it ran inside the container");
      t.equal(marker.code, 0, marker.stderr);
      const failing = await run("ssh", [
        ...sshArgs(alice.file),
        `alice+${pod}@127.0.0.1`,
        "cat /no-such-file",
      ]);
      t.equal(failing.code, 1, "cat's own exit status");
      t.match(failing.stderr, /no-such-file/, "the container's stderr is ssh's stderr");
      t.equal(failing.stdout, "");
      const missing = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "no-such-program"]);
      // the engine answers a program it cannot start with its reason and 126, as kubernetes does
      t.equal(missing.code, 126, JSON.stringify(missing));
      t.match(missing.stdout + missing.stderr, /no-such-program/, "the engine says why");
      // cat ends only when its stdin does: the client's EOF reaches the program
      const piped = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "cat"], "piped in\n");
      t.equal(piped.stdout, "piped in\n", piped.stderr);
      t.equal(piped.code, 0);
    });

    await t.test("a shell with a pty runs in the container; its exit status is ssh's", async (t) => {
      const shell = sshShell(t, [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`]);
      shell.type('echo "$((6*7)):$(cat /marker):$TERM:$(stty size)"\n');
      await waitFor(
        "the shell's answer",
        () => /42:in-the-container:xterm-256color:\d+ \d+/.test(shell.output()),
        slow,
      ).catch((error: Error) => {
        throw new Error(
          `${error.message}; the terminal showed ${JSON.stringify(shell.output().slice(-600))}`,
        );
      });
      shell.type("echo hi; exit 3\n");
      t.equal(await shell.exited, 3, shell.output().slice(-600));
      t.match(shell.output(), /^hi\r?$/m);
    });

    await t.test("sftp copies to and from the container's own files, both ways intact", async (t) => {
      const local = path.join(dir, "local");
      mkdirSync(local);
      const payload = randomBytes(1024 * 1024);
      writeFileSync(path.join(local, "up.bin"), payload);
      const sftpArgs = sshArgs(alice.file).map((a) => (a === "-p" ? "-P" : a));
      const batch = path.join(dir, "batch");
      writeFileSync(batch, "put up.bin /srv/up.bin\nget /srv/up.bin back.bin\nget /marker marker\n");
      const sftp = await run("sftp", [...sftpArgs, "-b", batch, `alice+${pod}@127.0.0.1`], "", {
        cwd: local,
      });
      t.equal(sftp.code, 0, sftp.stderr);
      t.equal(sha256(readFileSync(path.join(local, "back.bin"))), sha256(payload), "back intact");
      t.equal(readFileSync(path.join(local, "marker"), "utf8"), "in-the-container\n", "the container's file");
      const listed = await run("ssh", [
        ...sshArgs(alice.file),
        `alice+${pod}@127.0.0.1`,
        "wc -c /srv/up.bin",
      ]);
      t.match(
        listed.stdout,
        new RegExp(`^\\s*${payload.length}\\s+/srv/up\\.bin`),
        "the file is in the container",
      );
    });

    await t.test("ssh -L reaches the container's own port: the file sftp put there comes back", async (t) => {
      const localPort = await freePort();
      const forward = sshForward(t, sshArgs(alice.file), `${localPort}:${pod}:8080`);
      const body = await waitFor(
        "up.bin over HTTP through the forward",
        async () => {
          const response = await fetch(`http://127.0.0.1:${localPort}/up.bin`);
          return response.status === 200 ? Buffer.from(await response.arrayBuffer()) : undefined;
        },
        slow,
      );
      t.equal(sha256(body), sha256(readFileSync(path.join(dir, "local/up.bin"))), "the same bytes");
      // the container's loopback only: the httpd there is not the agent's machine's
      const closed = await run("ssh", [...sshArgs(alice.file), "-W", `${pod}:9`, "alice@127.0.0.1"]);
      t.not(closed.code, 0, "a port nothing in the container listens on is refused");
      t.match(closed.stderr, /forwarding failed|open failed/, closed.stderr);
      forward.kill();
    });

    await t.test("the hub's HTTP proxy reaches the container's own port", async (t) => {
      const response = await fetch(`${hub.url}/api/v1/namespaces/agent-edge/pods/${pod}/proxy/8080/up.bin`, {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      });
      t.equal(response.status, 200);
      const body = Buffer.from(await response.arrayBuffer());
      t.equal(sha256(body), sha256(readFileSync(path.join(dir, "local/up.bin"))), "the same bytes");
      const anonymous = await fetch(`${hub.url}/api/v1/namespaces/agent-edge/pods/${pod}/proxy/8080/up.bin`);
      t.equal(anonymous.status, 401, "no token, no proxy");
    });

    await t.test("a user without a grant is refused", async (t) => {
      const shell = await run("ssh", [...sshArgs(bob.file), "-tt", `bob+${pod}@127.0.0.1`], "exit 0\n");
      t.not(shell.code, 0, "no shell");
      t.notMatch(shell.stdout, /in-the-container/);
      const exec = await run("ssh", [...sshArgs(bob.file), `bob+${pod}@127.0.0.1`, "cat /marker"]);
      t.not(exec.code, 0, "no exec");
      t.equal(exec.stdout, "", "nothing ran");
      const batch = path.join(dir, "bob-batch");
      writeFileSync(batch, "get /marker bob-marker\n");
      const bobArgs = sshArgs(bob.file).map((a) => (a === "-p" ? "-P" : a));
      const sftp = await run("sftp", [...bobArgs, "-b", batch, `bob+${pod}@127.0.0.1`], "", { cwd: dir });
      t.not(sftp.code, 0, "no files");
    });
  },
);
