// Process-runtime Domain pods are confined by their namespace (docs/process-runtime.md
// "Privileges"): a real `rlark agent` (as root) runs their programs as the pods' uid, not root,
// so a pod cannot flush its REDIRECT, enter the host's network namespace or reach the
// nodeserver's socket, while its Domain traffic is still intercepted. Access sessions through
// the hub with the real OpenSSH client run in the pod's namespace as that uid, and `ssh -L` (and
// the hub's pod proxy) reach a port bound to the pod's own loopback. Needs root.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";
import type { Pod } from "../../operators/api/index.ts";
import { namespaceFor } from "../../operators/api/index.ts";
import { keygen, openSshArgs, policyYaml, sshForward, userYaml } from "../access/bastion-fixture.ts";
import { DomainClusters, podTaskYaml } from "../helpers/domain-clusters.ts";
import { domainYaml, jobYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const execFileAsync = promisify(execFile);
/** The agent's pod uids: --pod-uid's default 1338 and the 999 after it, one per Task. */
const POD_UIDS = { first: 1338, count: 1000 };

// Pod A checks what its program may do, writing each answer into its working directory, serves
// that directory on its own loopback only, then reaches B by the virtual IP the test hands it.
const podA = `id -u > uid.txt
iptables -t nat -F > iptables.txt 2>&1; echo "rc=$?" >> iptables.txt
nsenter --net=/proc/1/ns/net ip -o link > hostns.txt 2>&1; echo "rc=$?" >> hostns.txt
ip -o link > links.txt
python3 -m http.server 8123 --bind 127.0.0.1 --directory . >/dev/null 2>&1 &
while [ ! -s target.txt ]; do sleep 0.2; done
read vip sock < target.txt
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" "$sock" > socket.txt 2>&1; echo "rc=$?" >> socket.txt
until curl -sSf --max-time 3 "http://$vip:8000/hello.txt" > via-domain.tmp; do sleep 0.5; done
mv via-domain.tmp via-domain.txt
wait`;

t.test("Domain pods of a root agent run unprivileged, and so do sessions into them", async (t) => {
  const keysDir = mkdtempSync(path.join(tmpdir(), "rlark-harden-user-"));
  t.teardown(() => rmSync(keysDir, { recursive: true, force: true }));
  const alice = keygen(keysDir, "alice");
  const net = `100.${64 + Math.floor(Math.random() * 60)}`;
  const bed = await DomainClusters.start(t, ["c1"], {
    "domains.yaml": domainYaml("train", `${net}.0.0/24`),
    "train.yaml": jobYaml(
      "train",
      [
        podTaskYaml("a", "c1", podA, "hh-pod-a"),
        podTaskYaml(
          "b",
          "c1",
          "echo hello-from-b > hello.txt; python3 -m http.server 8000 & wait",
          "hh-pod-b",
        ),
      ],
      { domain: "train" },
    ),
    "users.yaml": userYaml("alice", ["user"], [alice.line]),
    "policy.yaml": policyYaml(
      "alice",
      '  subjects:\n    users: [alice]\n  verbs: [shell, exec, forward, files]\n  commands: ["id -u", "ip -o link", "iptables -t nat -F", "curl *"]\n',
    ),
  });
  const marker = (pod: string) => `hh-pod-${pod}`;
  const vipB = await bed.vip("c1", marker("b"));
  const pidA = await bed.podPid(marker("a"));
  const dirA = await waitFor("pod A's working directory", () => {
    try {
      return readFileSync(path.join(`/proc/${pidA}/cwd`, "uid.txt"), "utf8") && `/proc/${pidA}/cwd`;
    } catch {
      return undefined;
    }
  });
  const runDir = bed.agents.get("c1")?.runDir as string;
  writeFileSync(path.join(dirA, "target.txt"), `${vipB} ${path.join(runDir, "nodeserver.sock")}\n`);
  const answer = (file: string) =>
    waitFor(
      `pod A's ${file}`,
      () => {
        try {
          return readFileSync(path.join(dirA, file), "utf8").trim() || undefined;
        } catch {
          return undefined;
        }
      },
      onRealServers,
    );

  const POD_UID = await answer("uid.txt");
  await t.test("the pod's program runs as the pods' uid and cannot leave its namespace", async (t) => {
    const uid = Number(POD_UID);
    t.ok(
      uid >= POD_UIDS.first && uid < POD_UIDS.first + POD_UIDS.count,
      `not root, not the sidecar's 1337 (${uid})`,
    );
    const iptables = await answer("iptables.txt");
    t.notMatch(iptables, /rc=0$/, "iptables -F failed");
    t.match(iptables, /Permission denied|must be root/);
    const hostns = await answer("hostns.txt");
    t.notMatch(hostns, /rc=0$/, "entering the host's network namespace failed");
    t.match(hostns, /Permission denied|Operation not permitted/);
    const links = (await answer("links.txt")).split("\n").map((l) => l.split(":")[1]?.trim().split("@")[0]);
    t.same(links.sort(), ["eth0", "lo"], "it sees only its own interfaces");
    const socket = await answer("socket.txt");
    t.notMatch(socket, /rc=0$/, "the nodeserver's socket is closed to it");
    t.match(socket, /Permission denied/);
    const rules = (await bed.run(marker("a"), "iptables", ["-t", "nat", "-S", "RLARK_OUTPUT"])).trim();
    t.match(rules, /REDIRECT --to-ports 15001/, "the REDIRECT is still in place");
  });

  await t.test("its Domain traffic is still intercepted", async (t) => {
    t.equal(await answer("via-domain.txt"), "hello-from-b", "A reached B by its virtual IP");
  });

  const pods = await bed.hub.store.list<Pod>("Pod", { namespace: namespaceFor("c1") });
  const linkA = await bed.linkIP(marker("a"));
  const podName = pods.items.find((p) => p.status?.podIP === linkA)?.metadata.name as string;
  const knownHosts = path.join(keysDir, "known_hosts");
  writeFileSync(knownHosts, `${bed.hub.knownHosts}\n`);
  const port = Number(bed.hub.sshAddress.split(":")[1]);
  const ssh = async (command: string[]) => {
    try {
      const { stdout } = await execFileAsync(
        "ssh",
        [...openSshArgs(knownHosts, alice.file, port), `alice+${podName}@127.0.0.1`, ...command],
        { encoding: "utf8" },
      );
      return { code: 0, out: stdout.trim() };
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}`.trim() };
    }
  };

  await t.test("an ssh session runs in the pod's namespace, as the pod's user", async (t) => {
    t.same(await ssh(["id", "-u"]), { code: 0, out: POD_UID });
    const links = await ssh(["ip", "-o", "link"]);
    t.equal(links.code, 0);
    t.same(
      links.out
        .split("\n")
        .map((l) => l.split(":")[1]?.trim().split("@")[0])
        .sort(),
      ["eth0", "lo"],
      "the pod's interfaces, not the host's",
    );
    t.not((await ssh(["iptables", "-t", "nat", "-F"])).code, 0, "iptables -F refused");
    t.same(
      await ssh(["curl", "-sSf", "--max-time", "5", `http://${vipB}:8000/hello.txt`]),
      { code: 0, out: "hello-from-b" },
      "its Domain traffic is intercepted too",
    );
  });

  await t.test("ssh -L reaches a port bound to the pod's own loopback", async (t) => {
    const localPort = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });
    sshForward(t, openSshArgs(knownHosts, alice.file, port), `${localPort}:${podName}:8123`);
    const body = await waitFor(
      "the forwarded port answers",
      async () => (await fetch(`http://127.0.0.1:${localPort}/uid.txt`)).text(),
      onRealServers,
    );
    t.equal(body.trim(), POD_UID, "pod A's own 127.0.0.1:8123 answered");
  });

  await t.test("SFTP runs as the pod's user: an upload is the pod's file", async (t) => {
    writeFileSync(path.join(keysDir, "up.txt"), "from sftp\n");
    const batch = path.join(keysDir, "batch");
    writeFileSync(batch, `put ${path.join(keysDir, "up.txt")} sftp-up.txt\n`);
    const args = openSshArgs(knownHosts, alice.file, port).map((a) => (a === "-p" ? "-P" : a));
    await execFileAsync("sftp", [...args, "-b", batch, `alice+${podName}@127.0.0.1`], {
      encoding: "utf8",
      timeout: 60_000,
    });
    const uploaded = statSync(path.join(dirA, "sftp-up.txt"));
    t.equal(String(uploaded.uid), POD_UID, "owned by the pods' uid, not the agent's root");
    t.equal(readFileSync(path.join(dirA, "sftp-up.txt"), "utf8"), "from sftp\n");
  });

  await t.test("the hub's pod proxy reaches it there too", async (t) => {
    const response = await fetch(
      `${bed.hub.url}/api/v1/namespaces/${namespaceFor("c1")}/pods/${podName}/proxy/8123/uid.txt`,
      { headers: { authorization: `Bearer ${bed.hub.adminToken}` } },
    );
    const body = (await response.text()).trim();
    t.same({ status: response.status, body }, { status: 200, body: POD_UID }, "pod A's own 127.0.0.1:8123");
  });
});
