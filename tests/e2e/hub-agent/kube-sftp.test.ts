// SFTP into kubernetes-runtime pods end to end: the real OpenSSH sftp and scp (SFTP mode) against
// a hub on git, a kubernetes agent on a hack/kube cluster, and kwok serving pods/exec for its fake
// pods through the real kube-apiserver (ClusterExec runs the command here, in the pod's
// directory). The agent runs OpenSSH's sftp-server through pods/exec with its own RBAC (fleet/agent's),
// behind the packet-level path policy rooted at the container's workingDir.
import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { KubernetesObjectApi } from "@kubernetes/client-node";
import t from "tap";
import { startPodExec } from "../../../operators/agent/runtimes/kubernetes/access/pod-exec.ts";
import { startExecFiles } from "../../../operators/agent/runtimes/shared/exec-files.ts";
import { keygen, openSshArgs, policyYaml, readAudit, run, userYaml } from "../../access/bastion-fixture.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml } from "../../helpers/job-yaml.ts";
import { onKube, onRealServers, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
/** The transfers' size; RLARK_KUBE_SFTP_TEST_BYTES for a larger run. */
const FILE_BYTES = Number(process.env.RLARK_KUBE_SFTP_TEST_BYTES ?? 4 * 1024 * 1024);

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** A Deployment Task of one replica whose container's workingDir is `dir` (the policy root). */
const filesTaskYaml = (namespace: string, dir: string) => `    - name: trainer
      role: Actor
      agentType: Kubernetes
      kubernetes:
        workload:
          kind: Deployment
          replicas: 1
          template:
            namespace: ${namespace}
            spec:
              containers:
                - name: trainer
                  image: registry.local/rlark/trainer:1
                  workingDir: ${dir}
                  resources: { requests: { cpu: "1" } }
`;

/** Processes of this machine whose working directory is `dir` (kwok runs the pod's execs here). */
function processesIn(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) === dir) found.push(pid);
    } catch {
      // gone, or not ours to look at
    }
  }
  return found;
}

t.test("OpenSSH sftp and scp reach a kubernetes pod's container through hub and agent", async (t) => {
  const namespace = await testNamespace(t, kc, "kube-sftp");
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-kube-sftp-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const podDir = path.join(dir, "pod");
  const outside = path.join(dir, "outside");
  const local = path.join(dir, "local");
  for (const d of [podDir, outside, local]) mkdirSync(d);
  writeFileSync(path.join(podDir, "marker.txt"), "here\n");
  writeFileSync(path.join(outside, "secret.txt"), "not for sftp\n");

  const rule = {
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "ClusterExec",
    metadata: { name: namespace },
    spec: { selector: { matchNamespaces: [namespace] }, execs: [{ local: { workDir: podDir } }] },
  };
  const objects = KubernetesObjectApi.makeApiClient(kc);
  await objects.create(rule);
  t.teardown(() => objects.delete(rule).catch(() => undefined));

  const alice = keygen(dir, "alice");
  const bob = keygen(dir, "bob");
  const { hub } = await startHubOnGit(t, {
    files: {
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: gpu\nspec:\n  runtime: kubernetes\n",
      "users.yaml": [userYaml("alice", ["user"], [alice.line]), userYaml("bob", ["user"], [bob.line])].join(
        "---\n",
      ),
      "policies.yaml": [
        policyYaml(
          "alice-files",
          "  subjects:\n    users: [alice]\n  targets:\n    clusters: [gpu]\n  verbs: [files]\n",
        ),
        policyYaml(
          "bob-shell",
          "  subjects:\n    users: [bob]\n  targets:\n    clusters: [gpu]\n  verbs: [shell]\n",
        ),
      ].join("---\n"),
      "job.yaml": jobYaml("train", [filesTaskYaml(namespace, podDir)]),
    },
  });
  await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "gpu"), onKube);
  const { runtime, kubeConfig: agentKc, pod } = await startFleetKubeAgent(t, hub, kc, namespace, "gpu");

  const knownHosts = path.join(dir, "known_hosts");
  writeFileSync(knownHosts, `${hub.knownHosts}\n`);
  const sshArgs = (key: string) =>
    openSshArgs(knownHosts, key, hub.sshAddress.split(":")[1] as string).map((a) => (a === "-p" ? "-P" : a));
  const sftp = (user: "alice" | "bob", batch: string, container = "") => {
    const file = path.join(dir, `batch-${randomBytes(4).toString("hex")}`);
    writeFileSync(file, batch);
    const key = user === "alice" ? alice.file : bob.file;
    return run("sftp", [...sshArgs(key), "-b", file, `${user}+${pod}${container}@127.0.0.1`], "", {
      cwd: local,
    });
  };
  const payload = randomBytes(FILE_BYTES);
  writeFileSync(path.join(local, "big.bin"), payload);

  await t.test(
    "put, mkdir, rename, ls, get, chmod, rm and rmdir in the container's workingDir",
    async (t) => {
      const up = await sftp("alice", "put big.bin\nmkdir results\nrename big.bin results/big.bin\n");
      t.equal(up.code, 0, up.stderr);
      t.equal(sha256(readFileSync(path.join(podDir, "results/big.bin"))), sha256(payload), "uploaded intact");

      const down = await sftp(
        "alice",
        "ls -l results\nget results/big.bin back.bin\nget marker.txt\nchmod 600 results/big.bin\n",
      );
      t.equal(down.code, 0, down.stderr);
      t.match(down.stdout, new RegExp(`${FILE_BYTES}\\s.*big\\.bin`), "ls -l shows the file's size");
      t.equal(sha256(readFileSync(path.join(local, "back.bin"))), sha256(payload), "downloaded intact");
      t.equal(readFileSync(path.join(local, "marker.txt"), "utf8"), "here\n");

      const removed = await sftp("alice", "rm results/big.bin\nrmdir results\n");
      t.equal(removed.code, 0, removed.stderr);
      t.notOk(existsSync(path.join(podDir, "results")), "removed in the container");
    },
  );

  await t.test("scp in SFTP mode copies both ways", async (t) => {
    const up = await run("scp", [
      ...sshArgs(alice.file),
      "-s",
      path.join(local, "big.bin"),
      `alice+${pod}@127.0.0.1:scp.bin`,
    ]);
    t.equal(up.code, 0, up.stderr);
    t.equal(sha256(readFileSync(path.join(podDir, "scp.bin"))), sha256(payload));
    const down = await run("scp", [
      ...sshArgs(alice.file),
      "-s",
      `alice+${pod}@127.0.0.1:scp.bin`,
      path.join(local, "scp-back.bin"),
    ]);
    t.equal(down.code, 0, down.stderr);
    t.equal(sha256(readFileSync(path.join(local, "scp-back.bin"))), sha256(payload));
  });

  await t.test(
    "paths outside the policy root are refused, by name and through symlinks; no links are made",
    async (t) => {
      symlinkSync(outside, path.join(podDir, "out-link"));
      const escaped = path.join(tmpdir(), `rlark-kube-sftp-escaped-${randomBytes(4).toString("hex")}`);
      for (const batch of [
        `get ${outside}/secret.txt`,
        "get ../outside/secret.txt",
        "get results/../../outside/secret.txt",
        "get /etc/hostname",
        "get out-link/secret.txt",
        "cd out-link",
        "ls /",
        "cd ..",
        `put marker.txt ${escaped}`,
        "symlink marker.txt link",
        "ln marker.txt hardlink",
      ]) {
        const result = await sftp("alice", `${batch}\n`);
        t.not(result.code, 0, `${batch} fails`);
      }
      t.notOk(existsSync(path.join(local, "secret.txt")), "nothing came out");
      t.notOk(existsSync(path.join(local, "hostname")), "nothing came out");
      t.notOk(existsSync(escaped), "nothing went in");
      t.notOk(existsSync(path.join(podDir, "link")), "no symlink");
      t.notOk(existsSync(path.join(podDir, "hardlink")), "no hard link");
    },
  );

  await t.test("a user without the files grant is refused", async (t) => {
    const result = await sftp("bob", "ls\n");
    t.not(result.code, 0);
    t.match(result.stderr, /no AccessPolicy grants bob files/);
  });

  await t.test("the agent refuses what it cannot serve, naming the container", async (t) => {
    const wrong = await sftp("alice", "ls\n", "+sidecar");
    t.not(wrong.code, 0);
    t.match(wrong.stderr, /has no container sidecar/, "the agent's reason reaches the client");
    await t.rejects(
      runtime.access.openFiles({ namespace, name: pod, container: "sidecar" }),
      /has no container sidecar/,
    );
    await t.rejects(
      runtime.access.openFiles({ namespace, name: "stranger" }),
      /not one of this agent's pods/,
    );
    const target = { namespace, name: pod, container: "trainer" };
    const where = `container trainer of pod ${namespace}/${pod}`;
    const exec = (command: string[]) => startPodExec(agentKc, target, { ...target, command });
    await t.rejects(
      startExecFiles(exec, where, { root: podDir, servers: ["/nonexistent/sftp-server"] }),
      new RegExp(
        `container trainer of pod ${namespace}/${pod} has no sftp-server \\(looked at /nonexistent/sftp-server\\)`,
      ),
    );
    await t.rejects(
      startExecFiles(exec, where, {
        root: path.join(dir, "missing"),
        servers: ["/usr/lib/openssh/sftp-server"],
      }),
      /container trainer of pod .* has no directory .*missing to serve files from/,
    );
  });

  await t.test(
    "every sftp-server the container ran has exited; each session left an audit line with bytes",
    async (t) => {
      await waitFor("no process left in the pod's directory", () => processesIn(podDir).length === 0, onKube);
      const lines = await waitFor(
        "the audit lines",
        async () => {
          const all = (await readAudit(hub.audit.path)).filter((l) => l.verb === "files");
          return all.some((l) => l.actor === "bob") ? all : undefined;
        },
        onRealServers,
      );
      const target = `gpu/${namespace}/${pod}`;
      const alices = lines.filter((l) => l.actor === "alice" && l.target === target);
      t.ok(
        alices.some((l) => l.result === "ok" && l.bytesIn >= FILE_BYTES),
        "an upload counted its bytes",
      );
      t.ok(
        alices.some((l) => l.result === "ok" && l.bytesOut >= FILE_BYTES),
        "a download counted its bytes",
      );
      t.match(
        lines.find((l) => l.actor === "bob"),
        { result: "denied" },
      );
    },
  );
});
