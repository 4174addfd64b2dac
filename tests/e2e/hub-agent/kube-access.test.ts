// Access to kubernetes-runtime pods end to end: real OpenSSH and `rlark logs` against a hub on
// git, a kubernetes agent on a hack/kube cluster, and kwok serving exec, logs and port-forward for
// its fake pods through the real kube-apiserver (ClusterExec runs commands here in a test
// directory, ClusterLogs reads a CRI log file, ClusterPortForward forwards to a test server).
// The hub only opens agent streams; the agent reaches the pod with its own credentials.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api, KubernetesObjectApi } from "@kubernetes/client-node";
import t from "tap";
import {
  encodeFrame,
  FrameDecoder,
  FrameType,
  parseExit,
} from "../../../operators/lib/access-stream/index.ts";
import { keygen, openSshArgs, policyYaml, readAudit, run, userYaml } from "../../access/bastion-fixture.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { onKube, onRealServers, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const cli = new URL("../../../operators/cli/main.ts", import.meta.url).pathname;
const FORWARD_BYTES = 20 * 1024 * 1024;
const POD_PORT = 8080;
const HTTP_PORT = 8081;
const FLOOD_PORT = 8082;

/** One line of a CRI log file, as kwok's ClusterLogs reads it. */
const criLine = (text: string, time = new Date()) => `${time.toISOString()} stdout F ${text}\n`;

/**
 * kwok's rules for every pod of `namespace`: run commands in `dir`, read `log` (`previous` for
 * the run before), forward port 8080 to `port`, 8081 to `httpPort` and 8082 to `floodPort`.
 */
function kwokRules(
  namespace: string,
  dir: string,
  log: string,
  previous: string,
  port: number,
  httpPort: number,
  floodPort: number,
): object[] {
  const selector = { matchNamespaces: [namespace] };
  const meta = { name: namespace };
  return [
    {
      apiVersion: "kwok.x-k8s.io/v1alpha1",
      kind: "ClusterExec",
      metadata: meta,
      spec: {
        selector,
        execs: [{ local: { workDir: dir, envs: [{ name: "POD_HINT", value: "kube-pod" }] } }],
      },
    },
    {
      apiVersion: "kwok.x-k8s.io/v1alpha1",
      kind: "ClusterLogs",
      metadata: meta,
      spec: { selector, logs: [{ logsFile: log, previousLogsFile: previous, follow: true }] },
    },
    {
      apiVersion: "kwok.x-k8s.io/v1alpha1",
      kind: "ClusterPortForward",
      metadata: meta,
      spec: {
        selector,
        forwards: [
          { ports: [POD_PORT], target: { port, address: "127.0.0.1" } },
          { ports: [HTTP_PORT], target: { port: httpPort, address: "127.0.0.1" } },
          { ports: [FLOOD_PORT], target: { port: floodPort, address: "127.0.0.1" } },
        ],
      },
    },
  ];
}

/** Output of an ssh child so far, and a way to wait for some of it. */
function collect(child: ChildProcess): { text(): string } {
  let out = "";
  const add = (d: Buffer) => {
    if (out.length < 1_000_000) out += d.toString();
  };
  child.stdout?.on("data", add);
  child.stderr?.on("data", add);
  return { text: () => out };
}

/**
 * The pod's port 8082: writes to each connection as fast as it is taken, up to 1 GiB. `stalled()`
 * is true once a write waits for the reader and nothing moved since the last call.
 */
function floodServer() {
  let written = 0;
  let waiting = false;
  let seen = -1;
  const chunk = randomBytes(64 * 1024);
  const server = createServer((socket) => {
    socket.on("error", () => {});
    const pump = () => {
      waiting = false;
      while (written < 1024 ** 3) {
        written += chunk.length;
        if (!socket.write(chunk)) {
          waiting = true;
          socket.once("drain", pump);
          return;
        }
      }
      socket.end();
    };
    pump();
  });
  return {
    server,
    written: () => written,
    stalled() {
      const still = waiting && written === seen;
      seen = written;
      return still;
    },
  };
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

t.test("ssh shell, exec and -L and rlark logs -f reach a kubernetes pod through hub and agent", async (t) => {
  const namespace = await testNamespace(t, kc, "kube-access");
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-kube-access-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const podDir = path.join(dir, "pod");
  const logFile = path.join(dir, "pod.log");
  mkdirSync(podDir);
  writeFileSync(path.join(podDir, "marker.txt"), "here\n");
  // the first line is old: sinceSeconds leaves it out
  writeFileSync(logFile, criLine("first line", new Date("2020-01-01T00:00:00Z")) + criLine("second line"));
  const previousLog = path.join(dir, "previous.log");
  writeFileSync(previousLog, criLine("the run before"));

  // The pod's port 8080: 20 MB of random bytes to each connection, then the end.
  const payload = randomBytes(FORWARD_BYTES);
  const server = createServer((socket) => {
    socket.on("error", () => {});
    socket.end(payload);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  // The pod's port 8081: an HTTP server, for the hub's pod proxy.
  const flood = floodServer();
  await new Promise<void>((resolve) => flood.server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => flood.server.close());
  const web = createHttpServer((req, res) => res.end(`from the kube pod ${req.url}\n`));
  await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
  t.teardown(() => web.close());
  const rules = kwokRules(
    namespace,
    podDir,
    logFile,
    previousLog,
    (server.address() as AddressInfo).port,
    (web.address() as AddressInfo).port,
    (flood.server.address() as AddressInfo).port,
  );
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const rule of rules) await objects.create(rule);
  t.teardown(async () => {
    for (const rule of rules) await objects.delete(rule).catch(() => undefined);
  });

  const alice = keygen(dir, "alice");
  const bob = keygen(dir, "bob");
  const { hub } = await startHubOnGit(t, {
    files: {
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: gpu\nspec:\n  runtime: kubernetes\n",
      "users.yaml": [userYaml("alice", ["user"], [alice.line]), userYaml("bob", ["user"], [bob.line])].join(
        "---\n",
      ),
      "policies.yaml": policyYaml(
        "alice-gpu",
        '  subjects:\n    users: [alice]\n  targets:\n    clusters: [gpu]\n  verbs: [shell, exec, forward, logs, files]\n  commands: ["cat marker.txt", "ls *"]\n',
      ),
      "job.yaml": jobYaml("train", [
        trainerTaskYaml({ namespace, replicas: 1, resources: `{ requests: { cpu: "1" } }` }),
      ]),
    },
  });
  await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "gpu"), onKube);
  const { runtime, pod } = await startFleetKubeAgent(t, hub, kc, namespace, "gpu");

  const knownHosts = path.join(dir, "known_hosts");
  writeFileSync(knownHosts, `${hub.knownHosts}\n`);
  const sshArgs = (key: string) => openSshArgs(knownHosts, key, hub.sshAddress.split(":")[1] as string);
  const audit = () => readAudit(hub.audit.path);

  await t.test("a shell with a pty runs in the pod; its exit status is ssh's", async (t) => {
    const ssh = spawn("ssh", [...sshArgs(alice.file), "-tt", `alice+${pod}@127.0.0.1`], {
      env: { ...process.env, TERM: "xterm-256color" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    t.teardown(() => ssh.kill());
    const output = collect(ssh);
    const exited = new Promise<number | null>((resolve) => ssh.once("close", resolve));
    ssh.stdin?.write('echo "$((6*7)):$PWD:$POD_HINT:$TERM"\n');
    // kwok drops what a terminal program writes just before it exits: look before the exit
    await waitFor(
      "the shell's answer",
      () => output.text().includes(`42:${podDir}:kube-pod:xterm-256color`),
      onKube,
    );
    ssh.stdin?.write("exit 3\n");
    t.equal(await exited, 3, output.text());
  });

  await t.test("exec runs an allowlisted command; its output and exit status come back", async (t) => {
    const ok = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "cat marker.txt"]);
    t.equal(ok.code, 0, ok.stderr);
    t.equal(ok.stdout, "here\n");
    const failing = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "ls no-such-file"]);
    t.equal(failing.code, 2, "ls's own exit status");
    t.match(failing.stderr, /no-such-file/);
  });

  await t.test(`ssh -L moves ${FORWARD_BYTES} bytes from the pod's port intact`, async (t) => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const localPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const forward = spawn(
      "ssh",
      [
        ...sshArgs(alice.file),
        "-N",
        "-o",
        "ExitOnForwardFailure=yes",
        "-L",
        `${localPort}:${pod}:${POD_PORT}`,
        "alice@127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    t.teardown(() => forward.kill());
    // kwok keeps a forwarded connection open until its client closes it (it cannot see a
    // half-close through the apiserver), so the client reads the known length and closes
    const received = await waitFor(
      "the whole payload through the forward",
      () =>
        new Promise<Buffer | undefined>((resolve) => {
          const chunks: Buffer[] = [];
          let length = 0;
          const socket = connect(localPort, "127.0.0.1");
          socket.on("data", (chunk: Buffer) => {
            chunks.push(chunk);
            length += chunk.length;
            if (length >= FORWARD_BYTES) {
              socket.destroy();
              resolve(Buffer.concat(chunks));
            }
          });
          socket.on("error", () => resolve(undefined));
          socket.on("close", () => resolve(undefined));
        }),
      onKube,
    );
    t.equal(received.length, FORWARD_BYTES);
    t.equal(sha256(received), sha256(payload), "the same bytes");
    forward.kill();
  });

  await t.test("the log API's options reach the kube-apiserver; a wrong container is refused", async (t) => {
    const log = async (query: string) => {
      const response = await fetch(
        `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${pod}/log?namespace=agent-gpu&${query}`,
        { headers: { authorization: `Bearer ${hub.adminToken}` } },
      );
      return { status: response.status, text: await response.text() };
    };
    t.same(await log("tailLines=1"), { status: 200, text: "second line\n" });
    t.match((await log("tailLines=1&timestamps=true")).text, /^\d{4}-\d\d-\d\dT[\d:.]+Z second line\n$/);
    t.same(await log("limitBytes=5"), { status: 200, text: "first" });
    t.same(await log("sinceSeconds=3600"), { status: 200, text: "second line\n" });
    t.same(await log("previous=true"), { status: 200, text: "the run before\n" });
    const wrong = await log("container=sidecar");
    t.equal(wrong.status, 400);
    t.match(wrong.text, /has no container sidecar/);
  });

  await t.test("the hub's HTTP proxy reaches a kube pod's port", async (t) => {
    const response = await fetch(
      `${hub.url}/api/v1/namespaces/agent-gpu/pods/${pod}/proxy/${HTTP_PORT}/hello?x=1`,
      {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      },
    );
    t.equal(response.status, 200);
    t.equal(await response.text(), "from the kube pod /hello?x=1\n");
  });

  await t.test("rlark logs -f prints the pod's log and follows new lines", async (t) => {
    const follow = spawn(
      process.execPath,
      [cli, "logs", pod, "-f", "--tail", "1", "--hub", hub.url, "--token", hub.adminToken],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    t.teardown(() => follow.kill());
    const output = collect(follow);
    await waitFor("the last line of the log", () => output.text().includes("second line"), onKube);
    t.notMatch(output.text(), /first line/, "--tail 1");
    appendFileSync(logFile, criLine("a new line"));
    await waitFor("the new line followed", () => output.text().includes("a new line"), onKube);
    follow.kill();
  });

  await t.test("a user without a grant gets nothing; every access left an audit line", async (t) => {
    const shell = await run("ssh", [...sshArgs(bob.file), "-tt", `bob+${pod}@127.0.0.1`], "exit 0\n");
    t.equal(shell.code, 1);
    t.match(shell.stderr, /no AccessPolicy grants bob shell/);
    const exec = await run("ssh", [...sshArgs(bob.file), `bob+${pod}@127.0.0.1`, "cat marker.txt"]);
    t.equal(exec.code, 1);
    t.equal(exec.stdout, "");

    const lines = await waitFor(
      "the audit lines",
      async () => {
        const all = await audit();
        const done =
          all.some((l) => l.verb === "forward" && l.result === "ok") && all.some((l) => l.verb === "logs");
        return done ? all : undefined;
      },
      onRealServers,
    );
    const target = `gpu/${namespace}/${pod}`;
    const shellLine = lines.find((l) => l.actor === "alice" && l.verb === "shell");
    t.match(shellLine, { target, result: "ok", exitCode: 3 }, "the shell");
    t.match(
      lines.find((l) => l.actor === "alice" && l.verb === "exec" && l.exitCode === 0),
      { target, program: "cat" },
    );
    const forwarded = lines.find((l) => l.actor === "alice" && l.verb === "forward" && l.result === "ok");
    t.ok((forwarded?.bytesOut ?? 0) >= FORWARD_BYTES, "the forward counted its bytes");
    t.ok(
      lines.some((l) => l.verb === "logs" && l.target.includes(pod)),
      "the log read",
    );
    t.ok(
      lines.some((l) => l.verb === "proxy" && l.target.includes(pod)),
      "the proxied request",
    );
    t.equal(lines.filter((l) => l.actor === "bob" && l.result === "denied").length, 2, "both refusals");
  });

  await t.test("a forward nobody reads holds its pod's writer back and no other session", async (t) => {
    const stalled = await runtime.access.connect({ namespace, name: pod }, FLOOD_PORT);
    t.teardown(() => stalled.destroy());
    await waitFor("the pod's writer held back", () => flood.stalled(), onKube);
    t.ok(stalled.readableLength <= 2 * 1024 * 1024, `${stalled.readableLength} bytes wait in the agent`);
    t.ok(flood.written() < 1024 ** 3, "the writer did not run to its end");
    const other = await run("ssh", [...sshArgs(alice.file), `alice+${pod}@127.0.0.1`, "cat marker.txt"]);
    t.equal(other.stdout, "here\n", "another session through the same agent still works");
  });

  await t.test(
    "the agent's last check: a pod of no Task of this agent is refused, resize reaches the pty",
    async (t) => {
      const core = kc.makeApiClient(CoreV1Api);
      const stranger = "stranger";
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: stranger },
          spec: { nodeName: "gpu-0", containers: [{ name: "main", image: "registry.local/x:1" }] },
        },
      });
      await waitFor(
        "the stranger pod Running",
        async () => (await core.readNamespacedPod({ name: stranger, namespace })).status?.phase === "Running",
        onKube,
      );
      await t.rejects(
        runtime.access.openSession({ namespace, name: stranger }),
        /not one of this agent's pods/,
      );
      await t.rejects(
        runtime.access.connect({ namespace, name: stranger }, POD_PORT),
        /not one of this agent's pods/,
      );
      await t.rejects(runtime.logStream({ namespace, name: stranger }, {}), /not one of this agent's pods/);
      await t.rejects(
        runtime.access.openSession({ namespace, name: pod, container: "sidecar" }),
        /has no container sidecar/,
      );

      const session = await runtime.access.openSession({
        namespace,
        name: pod,
        pty: { term: "xterm", cols: 80, rows: 24 },
      });
      const decoder = new FrameDecoder();
      let text = "";
      let exit: ReturnType<typeof parseExit> | undefined;
      session.on("data", (chunk: Buffer) => {
        for (const frame of decoder.push(chunk)) {
          if (frame.type === FrameType.Stdout) text += frame.payload.toString();
          if (frame.type === FrameType.Exit) exit = parseExit(frame.payload);
        }
      });
      session.write(encodeFrame(FrameType.Resize, JSON.stringify({ cols: 132, rows: 43 })));
      session.write(encodeFrame(FrameType.Stdin, "stty size\n"));
      await waitFor("the new size", () => text.includes("43 132"), onKube);
      // An INT signal is the terminal's ^C key: with the line discipline's signals and echo off,
      // `cat -v` shows the byte it got
      session.write(encodeFrame(FrameType.Stdin, "stty -isig -echo; cat -v\n"));
      await waitFor("stty done", () => text.includes("cat -v"), onKube);
      session.write(encodeFrame(FrameType.Signal, "INT"));
      session.write(encodeFrame(FrameType.Stdin, "\n\x04"));
      await waitFor("^C read by cat", () => /\^C\r?\n/.test(text.slice(text.lastIndexOf("cat -v"))), onKube);
      session.write(encodeFrame(FrameType.Stdin, "stty sane; exit 7\n"));
      await waitFor("the exit frame", () => exit, onKube);
      t.same(exit, { code: 7 });
    },
  );
});
