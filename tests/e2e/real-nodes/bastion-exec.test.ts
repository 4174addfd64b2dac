// The bastion into a real pod on a real node (issue 24, item 5, first part): real OpenSSH through
// a hub on git and a kubernetes-runtime agent on the shared real-node fleet, into a pod that runs
// under a real kubelet and containerd; the agent reaches it through pods/exec. A shell with a pty
// answers from the pod's own hostname and its exit status is ssh's; an allowlisted exec returns
// the container's stdout, and a failing one the command's own exit status; OpenSSH sftp and scp
// copy to and from the container's working directory (the image's sftp-server), and ssh -L reaches
// the container's port 8080; the hub's log API
// reads the container's CRI log (tail, timestamps), and after the container restarted, the
// previous run's log.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { keygen, openSshArgs, policyYaml, run, sshShell, userYaml } from "../../access/bastion-fixture.ts";
import { realNodeFleetClusters, testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml } from "../../helpers/job-yaml.ts";
import { realBusyboxTaskYaml } from "../../helpers/real-pods.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const [cluster] = realNodeFleetClusters();
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const kc = cluster!.kubeConfig;

/**
 * A task whose one pod runs busybox on the real node (the image is imported there, never pulled).
 * Each run of its container counts itself in an emptyDir, logs two lines, serves its working
 * directory over HTTP on port 8080 (busybox httpd, in the background) and sleeps; SIGTERM to
 * its PID 1 (`kill 1`) ends the run, and kubelet starts the next.
 */
const realPodTask = (namespace: string) =>
  realBusyboxTaskYaml(
    "shell",
    namespace,
    `                  command:
                    - sh
                    - -c
                    - >-
                      trap 'exit 1' TERM;
                      n=$(( $(cat /data/n 2>/dev/null || echo 0) + 1 )); echo $n > /data/n;
                      echo run-$n line-one; echo run-$n line-two;
                      httpd -p 8080 -h /root;
                      sleep 2147483647 & wait
                  workingDir: /root
                  volumeMounts: [{ name: data, mountPath: /data }]
`,
    `              volumes: [{ name: data, emptyDir: {} }]
`,
  );

t.test("ssh shell and exec reach a real pod on a real node through hub and agent", async (t) => {
  const namespace = await testNamespace(t, kc, "real-bastion");
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-real-bastion-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const alice = keygen(dir, "alice");
  const { hub } = await startHubOnGit(t, {
    files: {
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: gpu\nspec:\n  runtime: kubernetes\n",
      "users.yaml": userYaml("alice", ["user"], [alice.line]),
      "policies.yaml": policyYaml(
        "alice-gpu",
        '  subjects:\n    users: [alice]\n  targets:\n    clusters: [gpu]\n  verbs: [shell, exec, files, forward]\n  commands: ["cat /etc/hostname", "ls *", "kill 1"]\n',
      ),
      "job.yaml": jobYaml("real", [realPodTask(namespace)]),
    },
  });
  await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "gpu"), onKube);
  const { pod } = await startFleetKubeAgent(t, hub, kc, namespace, "gpu");

  // the pod Kubernetes runs: on the real node, so its hostname is its own name
  const core = kc.makeApiClient(CoreV1Api);
  const real = await waitFor(
    "the task's pod Running on the real node",
    async () =>
      (await core.listNamespacedPod({ namespace })).items.find(
        (p) => p.spec?.nodeName === "real-0" && p.status?.phase === "Running",
      ),
    onKube,
  );
  const hostname = real.metadata?.name ?? "";
  t.ok(hostname, "a pod on real-0");

  const knownHosts = path.join(dir, "known_hosts");
  writeFileSync(knownHosts, `${hub.knownHosts}\n`);
  const sshArgs = openSshArgs(knownHosts, alice.file, hub.sshAddress.split(":")[1] as string);

  await t.test("a shell with a pty runs in the real pod; its exit status is ssh's", async (t) => {
    const shell = sshShell(t, [...sshArgs, `alice+${pod}@127.0.0.1`]);
    shell.type('echo "$((6*7)):$(hostname):$TERM"\n');
    await waitFor(
      "the shell's answer",
      () => shell.output().includes(`42:${hostname}:xterm-256color`),
      onKube,
    );
    shell.type("exit 3\n");
    t.equal(await shell.exited, 3, shell.output());
  });

  await t.test("exec runs an allowlisted command in the real pod; output and status come back", async (t) => {
    const ok = await run("ssh", [...sshArgs, `alice+${pod}@127.0.0.1`, "cat /etc/hostname"]);
    t.equal(ok.code, 0, ok.stderr);
    t.equal(ok.stdout, `${hostname}\n`, "the real pod's own /etc/hostname");
    const failing = await run("ssh", [...sshArgs, `alice+${pod}@127.0.0.1`, "ls /no-such-file"]);
    t.equal(failing.code, 1, "busybox ls's own exit status");
    t.match(failing.stderr, /no-such-file/);
  });

  await t.test("sftp and scp copy to and from the real container's working directory", async (t) => {
    const local = path.join(dir, "local");
    mkdirSync(local);
    const payload = randomBytes(1024 * 1024);
    writeFileSync(path.join(local, "up.bin"), payload);
    const scpArgs = sshArgs.map((a) => (a === "-p" ? "-P" : a));
    const batch = path.join(dir, "batch");
    writeFileSync(batch, "put up.bin\nget up.bin back.bin\n");
    const sftp = await run("sftp", [...scpArgs, "-b", batch, `alice+${pod}@127.0.0.1`], "", { cwd: local });
    t.equal(sftp.code, 0, sftp.stderr);
    t.equal(sha256(readFileSync(path.join(local, "back.bin"))), sha256(payload), "sftp: back intact");
    const listed = await run("ssh", [...sshArgs, `alice+${pod}@127.0.0.1`, "ls -l /root/up.bin"]);
    t.match(listed.stdout, new RegExp(`\\s${payload.length}\\s.*up\\.bin`), "the file is in the container");
    const scpUp = await run("scp", [
      ...scpArgs,
      "-s",
      path.join(local, "up.bin"),
      `alice+${pod}@127.0.0.1:scp.bin`,
    ]);
    t.equal(scpUp.code, 0, scpUp.stderr);
    const scpDown = await run("scp", [
      ...scpArgs,
      "-s",
      `alice+${pod}@127.0.0.1:scp.bin`,
      path.join(local, "scp-back.bin"),
    ]);
    t.equal(scpDown.code, 0, scpDown.stderr);
    t.equal(sha256(readFileSync(path.join(local, "scp-back.bin"))), sha256(payload), "scp: both ways intact");
  });

  await t.test("ssh -L reaches the real container's port: the file sftp put there comes back", async (t) => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const localPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const forward = spawn(
      "ssh",
      [
        ...sshArgs,
        "-N",
        "-o",
        "ExitOnForwardFailure=yes",
        "-L",
        `${localPort}:${pod}:8080`,
        "alice@127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    t.teardown(() => forward.kill());
    const body = await waitFor(
      "up.bin over HTTP through the forward",
      async () => {
        const response = await fetch(`http://127.0.0.1:${localPort}/up.bin`);
        return response.status === 200 ? Buffer.from(await response.arrayBuffer()) : undefined;
      },
      onKube,
    );
    t.equal(sha256(body), sha256(readFileSync(path.join(dir, "local/up.bin"))), "the same bytes");
    forward.kill();
  });

  await t.test("the log API reads the real container's log, and the run before a restart", async (t) => {
    const log = async (query: string) => {
      const response = await fetch(
        `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${pod}/log?namespace=agent-gpu&${query}`,
        { headers: { authorization: `Bearer ${hub.adminToken}` } },
      );
      return { status: response.status, text: await response.text() };
    };
    t.same(
      await waitFor(
        "the first run's log",
        async () => {
          const now = await log("tailLines=5");
          return now.text.includes("line-two") ? now : undefined;
        },
        onKube,
      ),
      { status: 200, text: "run-1 line-one\nrun-1 line-two\n" },
    );
    t.same(await log("tailLines=1"), { status: 200, text: "run-1 line-two\n" });
    t.match((await log("tailLines=1&timestamps=true")).text, /^\d{4}-\d\d-\d\dT[\d:.]+Z run-1 line-two\n$/);
    const kill = await run("ssh", [...sshArgs, `alice+${pod}@127.0.0.1`, "kill 1"]);
    // kill's own 0, or 137: PID 1's end SIGKILLs every process left in the container's PID
    // namespace, and the exec'd kill may still be one of them when the container stops
    t.ok(kill.code === 0 || kill.code === 137, `kill 1 ran (exit ${kill.code}) ${kill.stderr}`);
    await waitFor(
      "the container's second run",
      async () => {
        const p = await core.readNamespacedPod({ namespace, name: hostname });
        const c = p.status?.containerStatuses?.[0];
        return c?.restartCount === 1 && c.state?.running !== undefined;
      },
      onKube,
    );
    t.same(
      await waitFor(
        "the second run's log",
        async () => {
          const now = await log("tailLines=5");
          return now.text.includes("run-2 line-two") ? now : undefined;
        },
        onKube,
      ),
      { status: 200, text: "run-2 line-one\nrun-2 line-two\n" },
      "the current run",
    );
    t.same(
      await log("previous=true"),
      { status: 200, text: "run-1 line-one\nrun-1 line-two\n" },
      "previous: the run before the restart",
    );
  });
});
