// `node hack/bench/access/kubectl-anchors.ts [bytes=268435456] [rounds=1]`: what a user would pick
// instead of the bastion, measured in the same run against the same real pod (issue 24, item 6).
// A busybox pod on a real node of the real-node fleet (docs/kube.md, "Real nodes"; started if
// not running, and stopped again at the end then) serves a file of `bytes` random bytes over
// HTTP on its port 8080 from its working directory. Two pairs, each timed on the same file:
//   - copy: `kubectl cp` (tar over pods/exec, the fleet's admin) vs OpenSSH `sftp get` through the
//     hub's bastion and a kubernetes-runtime agent (sftp-server over pods/exec);
//   - forward: `kubectl port-forward` vs `ssh -L` through the bastion (pods/portforward), each
//     read with curl to /dev/null.
// Prints MB/s of each and the ratio bastion / kubectl; with rounds > 1 the two alternate which
// goes first and the best of each is compared. Both paths end in the same API server and
// kubelet; the bastion's adds the hub and the agent (its own thread, as it is its own process
// deployed). Needs root (the real nodes), `bash hack/kube/build --kubectl`, curl and OpenSSH's
// clients. Asserts nothing but that every copy is intact.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { CoreV1Api } from "@kubernetes/client-node";
import { startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { realFleetDir, realNodeFleetClusters } from "../../../tests/helpers/fleet.ts";
import { freePort } from "../../../tests/helpers/free-port.ts";
import { podExec, realBusyboxTaskYaml } from "../../../tests/helpers/real-pods.ts";
import { kubectlBinary, repoRoot } from "../../kube/paths.ts";

const BYTES = Number(process.argv[2] ?? 256 * 1024 ** 2);
const ROUNDS = Number(process.argv[3] ?? 1);
const KUBECTL = kubectlBinary();
if (!existsSync(KUBECTL)) throw new Error(`no ${KUBECTL}: run bash hack/kube/build --kubectl first`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let i = 0; i < 3000; i++) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`never happened: ${what}`);
}

async function sha256(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Runs a client to its end, asynchronously (the hub shares this event loop); its seconds. */
function timed(command: string, args: string[]): Promise<number> {
  const start = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve(Number(process.hrtime.bigint() - start) / 1e9)
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}`)),
    );
  });
}

// the real-node fleet: joined when it runs, else started here and stopped at the end
const fleetEnv = { ...process.env, RLARK_FLEET_DIR: realFleetDir() };
const startedFleet = !existsSync(path.join(realFleetDir(), "clusters.json"));
const [cluster] = realNodeFleetClusters();
if (!cluster) throw new Error("the real-node fleet has no cluster");
const kc = cluster.kubeConfig;
const core = kc.makeApiClient(CoreV1Api);
const namespace = `bench-anchors-${randomBytes(3).toString("hex")}`;
const dir = await mkdtemp(path.join(tmpdir(), "rlark-bench-anchors-"));
const children: ChildProcess[] = [];
let agent: Worker | undefined;
let stopHub: (() => Promise<void>) | undefined;
try {
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "user")]);
  const userKey = execFileSync("ssh-keygen", ["-y", "-f", path.join(dir, "user")])
    .toString()
    .trim();
  const podCommand = `head -c ${BYTES} /dev/urandom > /root/big.bin.part && mv /root/big.bin.part /root/big.bin; httpd -p 8080 -h /root; sleep 2147483647 & wait`;
  const repo = path.join(dir, "repo");
  mkdirSync(repo);
  writeFileSync(
    path.join(repo, "all.yaml"),
    `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: gpu }
spec: { runtime: kubernetes }
---
apiVersion: rlinf.io/v1alpha1
kind: User
metadata: { name: bench }
spec: { roles: [user], sshPublicKeys: [${JSON.stringify(userKey)}] }
---
apiVersion: rlinf.io/v1alpha1
kind: AccessPolicy
metadata: { name: bench }
spec: { subjects: { users: [bench] }, verbs: [files, forward] }
---
apiVersion: rlinf.io/v1alpha1
kind: Job
metadata: { name: bench }
spec:
  tasks:
${realBusyboxTaskYaml(
  "main",
  namespace,
  `                  command: ["sh", "-c", ${JSON.stringify(podCommand)}]\n                  workingDir: /root\n`,
)}`,
  );
  const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "add", ".");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench");
  const hub = await startHub({
    dataDir: path.join(dir, "hub"),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    repo: `file://${repo}`,
    branch: "main",
    logger: silentLogger,
  });
  stopHub = () => hub.stop();
  await until(
    "cluster declared",
    async () => (await hub.store.get("Cluster", undefined, "gpu")) ?? undefined,
  );
  const { token } = await hub.pki.enrollment.createToken({ cluster: "gpu", ttlMs: 60_000 });
  agent = new Worker(new URL("./kube-agent-worker.ts", import.meta.url), {
    workerData: {
      hub: hub.sshAddress,
      token,
      caHash: hub.caFingerprint,
      credentials: path.join(dir, "agent.json"),
      kubeconfig: cluster.kubeconfig,
      namespace,
    },
  });
  await new Promise((resolve, reject) => {
    agent?.once("message", resolve);
    agent?.once("error", reject);
  });
  // the Deployment's pod that stays (an early rollout may replace the first), then the same pod
  // on the hub (the hub's Pod has the Kubernetes pod's name)
  const pod = await until(
    "the pod Running on real-0",
    async () =>
      (await core.listNamespacedPod({ namespace })).items.find(
        (p) =>
          p.spec?.nodeName === "real-0" && p.status?.phase === "Running" && !p.metadata?.deletionTimestamp,
      )?.metadata?.name,
  );
  const hubPod = await until("the pod Running on the hub", async () => {
    const found = await hub.store.get("Pod", "agent-gpu", pod);
    return (found?.status as { phase?: string } | undefined)?.phase === "Running" ? pod : undefined;
  });
  const target = { namespace, name: pod, container: "main" };
  await until("the pod's file written", async () =>
    (await podExec(kc, target, ["stat", "-c", "%s", "/root/big.bin"])).stdout.trim() === String(BYTES)
      ? true
      : undefined,
  );
  const want = (await podExec(kc, target, ["sha256sum", "/root/big.bin"])).stdout.split(/\s/)[0];

  const common = [
    "-F",
    "/dev/null",
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    `UserKnownHostsFile=${path.join(dir, "kh")}`,
    "-o",
    "BatchMode=yes",
    "-i",
    path.join(dir, "user"),
  ];
  const hubPort = hub.sshAddress.split(":")[1] as string;
  const copy = path.join(dir, "copy.bin");
  let intact = true;
  const check = async () => {
    intact &&= (await sha256(copy)) === want;
    await rm(copy);
  };
  const kubectl = ["--kubeconfig", cluster.kubeconfig, "-n", namespace];
  const batch = path.join(dir, "batch");
  writeFileSync(batch, `get big.bin ${copy}\n`);
  const copies = {
    bastion: () =>
      timed("sftp", [
        ...common,
        "-o",
        "LogLevel=ERROR",
        "-P",
        hubPort,
        "-b",
        batch,
        `bench+${hubPod}@127.0.0.1`,
      ]),
    kubectl: () => timed(KUBECTL, [...kubectl, "cp", "-c", "main", `${pod}:/root/big.bin`, copy]),
  };
  /**
   * A forward on a free local port: started, then, once it says it listens (a probe connection
   * would be a forwarded connection of its own), read to its end by curl.
   */
  const forwarded = async (start: (port: number) => ChildProcess, listening: RegExp): Promise<number> => {
    const port = await freePort();
    const child = start(port);
    children.push(child);
    try {
      let said = "";
      await new Promise<void>((resolve, reject) => {
        const look = (chunk: Buffer) => {
          said = (said + chunk.toString()).slice(-4096);
          if (listening.test(said)) resolve();
        };
        child.stdout?.on("data", look);
        child.stderr?.on("data", look);
        child.once("exit", (code) => reject(new Error(`the forward exited ${code}: ${said}`)));
      });
      return await timed("curl", ["-sSf", "-o", copy, `http://127.0.0.1:${port}/big.bin`]);
    } finally {
      child.kill();
    }
  };
  const forwards = {
    bastion: () =>
      forwarded(
        (port) =>
          spawn(
            "ssh",
            [...common, "-v", "-p", hubPort, "-N", "-L", `${port}:${hubPod}:8080`, "bench@127.0.0.1"],
            {
              stdio: ["ignore", "pipe", "pipe"],
            },
          ),
        /Local forwarding listening on 127\.0\.0\.1 port \d+/,
      ),
    kubectl: () =>
      forwarded(
        (port) =>
          spawn(KUBECTL, [...kubectl, "port-forward", `pod/${pod}`, `${port}:8080`], {
            stdio: ["ignore", "pipe", "pipe"],
          }),
        /Forwarding from 127\.0\.0\.1:\d+/,
      ),
  };
  const mb = BYTES / 1e6;
  const measure = async (title: string, pair: Record<"bastion" | "kubectl", () => Promise<number>>) => {
    const runs = { bastion: [] as number[], kubectl: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (["bastion", "kubectl"] as const) : (["kubectl", "bastion"] as const);
      for (const side of order) {
        runs[side].push(mb / (await pair[side]()));
        await check();
      }
    }
    const best = { bastion: Math.max(...runs.bastion), kubectl: Math.max(...runs.kubectl) };
    const each = runs.bastion.map((b, i) => (b / (runs.kubectl[i] ?? b)).toFixed(2)).join(" ");
    console.log(`== ${title}, ${mb.toFixed(0)} MB ==`);
    console.log(
      `bastion  ${best.bastion.toFixed(1)} MB/s   (runs: ${runs.bastion.map((x) => x.toFixed(1)).join(" ")})`,
    );
    console.log(
      `kubectl  ${best.kubectl.toFixed(1)} MB/s   (runs: ${runs.kubectl.map((x) => x.toFixed(1)).join(" ")})`,
    );
    console.log(
      `ratio    ${(best.bastion / best.kubectl).toFixed(2)}x bastion/kubectl   (per round: ${each})`,
    );
  };
  await measure("copy out of the pod: sftp through the bastion vs kubectl cp", copies);
  await measure("one forwarded connection: ssh -L through the bastion vs kubectl port-forward", forwards);
  console.log(`every copy intact (sha256): ${intact}`);
} finally {
  for (const child of children) child.kill();
  if (agent) {
    const stopped = new Promise((resolve) => agent?.once("message", resolve));
    agent.postMessage("stop");
    await stopped;
    await agent.terminate();
  }
  await stopHub?.();
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
  if (startedFleet)
    execFileSync("bash", [path.join(repoRoot, "hack/kube/down")], { env: fleetEnv, stdio: "inherit" });
}
