// A Docker pod in a Domain, end to end on the real path (as root): a real hub on git with its
// domain relay, a `rlark agent --runtime docker` on a real dockerd of the test's own (cluster dk)
// and a process-runtime agent (cluster pc), each with its nodeserver. The Docker pod's sidecar
// container holds its network (the agent's veth link and REDIRECT in it), the pod's container
// joins it, and the two pods reach each other by virtual IP both ways through sidecar ->
// nodeserver -> hub relay -> nodeserver -> sidecar; a pod of another Domain does not get through.
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import t from "tap";
import type { Pod } from "../../../operators/api/index.ts";
import { namespaceFor } from "../../../operators/api/index.ts";
import { startDockerd } from "../../helpers/dockerd.ts";
import { DomainClusters, podTaskYaml } from "../../helpers/domain-clusters.ts";
import { domainYaml, jobYaml } from "../../helpers/job-yaml.ts";
import { relayedSince } from "../../helpers/relayed-bytes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const execFileAsync = promisify(execFile);
const slow = { ...onRealServers, attempts: 1200 };

const dockerTaskYaml = (name: string, cluster: string, script: string) => `    - name: ${name}
      role: Env
      agentType: Docker
      clusterSelector: { matchLabels: { region: ${cluster} } }
      docker:
        image: rlark-test/busybox:1
        command: ["sh", "-c"]
        args: [${JSON.stringify(script)}]
        restartPolicy: Always
`;

t.test(
  "a Docker pod and a process pod of one Domain talk by virtual IP; another Domain's pod is refused",
  async (t) => {
    const engine = await startDockerd(t);
    const id = Math.floor(Math.random() * 60);
    const net = `100.${64 + id}`;
    const payloadDir = `/tmp/rlark-docker-domain-${process.pid}-${id}`;
    mkdirSync(payloadDir, { recursive: true });
    writeFileSync(`${payloadDir}/f.txt`, "from-process\n");
    t.teardown(() => rmSync(payloadDir, { recursive: true, force: true }));
    const m = (pod: string) => `rlark-dd-${process.pid}-${id}-${pod}`;
    const files = {
      "domains.yaml": `${domainYaml("lab", `${net}.0.0/24`)}---\n${domainYaml("other", `${net}.1.0/24`)}`,
      "mix.yaml": jobYaml(
        "mix",
        [
          dockerTaskYaml(
            "d",
            "dk",
            "mkdir -p /www && echo from-docker > /www/i.txt && exec httpd -f -p 8000 -h /www",
          ),
          podTaskYaml(
            "p",
            "pc",
            `python3 -m http.server 8001 --bind 0.0.0.0 --directory ${payloadDir}`,
            m("p"),
          ),
          // a process pod of a third cluster: the baseline of the throughput figures
          podTaskYaml("q", "pc2", "sleep 3600", m("q")),
        ],
        { domain: "lab" },
      ),
      "x.yaml": jobYaml("x", [podTaskYaml("x", "pc", "sleep 3600", m("x"))], { domain: "other" }),
    };
    const bed = await DomainClusters.start(t, ["dk", "pc", "pc2"], files, {
      runtimes: { dk: "docker" },
      agentArgs: { dk: ["--runtime", "docker", "--docker-host", engine.host] },
    });
    t.teardown(() => {
      if (t.passing()) return;
      t.comment(bed.logTails());
    });

    const dockerPod = () =>
      waitFor(
        "the Docker pod's virtual IP and link address on the hub",
        async () => {
          const pods = await bed.hub.store.list<Pod>("Pod", { namespace: namespaceFor("dk") });
          const pod = pods.items.find((p) => p.metadata.name.startsWith("mix-d-"));
          return pod?.status?.domainIP && pod.status.podIP && pod.status.phase === "Running"
            ? pod
            : undefined;
        },
        slow,
      );
    const pod = await dockerPod();
    const vipD = pod.status?.domainIP as string;
    const podIP = pod.status?.podIP as string;
    const vipP = await bed.vip("pc", m("p"));
    t.match(
      vipD,
      new RegExp(`^${net.replaceAll(".", "\\.")}\\.0\\.`),
      "the Docker pod's virtual IP is in lab's range",
    );

    const containers = async () => {
      const all = await engine.client.listContainers({
        all: true,
        filters: { label: ["rlinf.io/pod=mix-d-0"] },
      });
      const sidecar = all.find((c) => c.Labels["rlinf.io/sidecar"] === "rlark-net");
      const app = all.find((c) => !c.Labels["rlinf.io/sidecar"]);
      return { all, sidecar, app };
    };
    const dockerRun = async (...argv: string[]) => {
      const { app } = await containers();
      return (
        await execFileAsync("docker", ["-H", engine.host, "exec", app?.Id as string, ...argv], {
          encoding: "utf8",
        })
      ).stdout;
    };

    await t.test(
      "the pod is a sidecar container holding the network and the pod's container in it",
      async (t) => {
        const { all, sidecar, app } = await containers();
        t.equal(all.length, 2, "two containers for the one replica");
        const appInfo = await engine.client.getContainer(app?.Id as string).inspect();
        const sidecarInfo = await engine.client.getContainer(sidecar?.Id as string).inspect();
        t.equal(
          appInfo.HostConfig.NetworkMode,
          `container:${sidecar?.Id}`,
          "the pod's container joins the sidecar's network",
        );
        t.equal(
          sidecarInfo.Config.User,
          "1337:1337",
          "the sidecar runs as the uid the REDIRECT lets through",
        );
        t.equal(sidecarInfo.HostConfig.NetworkMode, "none", "no network of the engine's");
        const addresses = await dockerRun("ip", "-4", "-o", "addr");
        t.match(
          addresses,
          new RegExp(` lo +inet ${vipD.replaceAll(".", "\\.")}/32`),
          "the virtual IP on the pod's loopback",
        );
        t.match(
          addresses,
          new RegExp(` eth0 +inet ${podIP.replaceAll(".", "\\.")}/30`),
          "the reported podIP is its link's end",
        );
      },
    );

    await t.test("the process pod reaches the Docker pod by its virtual IP", async (t) => {
      const before = bed.hub.domainRelay?.stats().relayedBytes ?? 0;
      const body = await waitFor(
        "the Docker pod's httpd from the process pod",
        () =>
          bed
            .run(m("p"), "curl", ["-sSf", "--max-time", "5", `http://${vipD}:8000/i.txt`])
            .catch(() => undefined),
        slow,
      );
      t.equal(body, "from-docker\n");
      t.ok(await relayedSince(bed.hub.domainRelay, before), "through the hub's relay");
    });

    await t.test("the Docker pod reaches the process pod by its virtual IP", async (t) => {
      const body = await waitFor(
        "the process pod's server from the Docker pod",
        () => dockerRun("timeout", "10", "wget", "-qO-", `http://${vipP}:8001/f.txt`).catch(() => undefined),
        slow,
      );
      t.equal(body, "from-process\n");
    });

    await t.test("64 MiB from the process pod into the Docker pod, byte for byte", async (t) => {
      const payload = randomBytes(64 * 1024 * 1024);
      writeFileSync(`${payloadDir}/big.bin`, payload);
      const before = bed.hub.domainRelay?.stats().relayedBytes ?? 0;
      const started = process.hrtime.bigint();
      await dockerRun("wget", "-qO", "/tmp/big.bin", `http://${vipP}:8001/big.bin`);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const [digest] = (await dockerRun("sha256sum", "/tmp/big.bin")).split(" ");
      t.equal(digest, createHash("sha256").update(payload).digest("hex"), "sha256 matches");
      t.ok(await relayedSince(bed.hub.domainRelay, before, payload.length), "the hub relayed it");
      // Figures for the record, not checks (this machine is shared): the same bytes the other way
      // through the relay, and over the Docker pod's own loopback with the same wget, as a baseline.
      await dockerRun("mv", "/tmp/big.bin", "/www/big.bin");
      const time = async (run: () => Promise<unknown>) => {
        const start = process.hrtime.bigint();
        await run();
        return Number(process.hrtime.bigint() - start) / 1e9;
      };
      const back = await time(() =>
        bed.run(m("p"), "curl", ["-sSf", "-o", "/dev/null", `http://${vipD}:8000/big.bin`]),
      );
      const loopback = await time(() => dockerRun("wget", "-qO", "/tmp/b2", "http://127.0.0.1:8000/big.bin"));
      const processes = await time(() =>
        bed.run(m("q"), "curl", ["-sSf", "-o", "/dev/null", `http://${vipP}:8001/big.bin`]),
      );
      t.comment(
        `64 MiB through the relay: process -> docker ${(64 / seconds).toFixed(1)} MiB/s, docker -> process ${(64 / back).toFixed(1)} MiB/s; process (pc) -> process (pc2) ${(64 / processes).toFixed(1)} MiB/s; busybox wget over the Docker pod's loopback ${(64 / loopback).toFixed(1)} MiB/s`,
      );
      await dockerRun("rm", "/www/big.bin", "/tmp/b2");
    });

    await t.test("a pod of another Domain does not reach the Docker pod", async (t) => {
      await t.rejects(
        bed.run(m("x"), "curl", ["-sSf", "--max-time", "5", `http://${vipD}:8000/i.txt`]),
        "curl from Domain other fails",
      );
      // An address of lab that is no pod's: dk's nodeserver refuses the CONNECT and says so.
      const nobody = `${net}.0.250`;
      await t.rejects(
        dockerRun("timeout", "10", "wget", "-qO-", `http://${nobody}:8000/`),
        "nobody's address",
      );
      const log = bed.agents.get("dk")?.log as string;
      const refusal = await waitFor(
        "the refusal in dk's nodeserver log",
        () =>
          readFileSync(log, "utf8")
            .split("\n")
            .find((line) => line.includes('"connection refused"') && line.includes(`${nobody}:8000`)),
        onRealServers,
      );
      t.match(JSON.parse(refusal), { domain: "lab", source: vipD, status: 403 });
    });

    await t.test(
      "a kill -9 of the docker agent keeps the pod and its network; the new agent adopts them",
      async (t) => {
        const { sidecar, app } = await containers();
        const dk = bed.agents.get("dk");
        const exited = new Promise((resolve) => dk?.child.once("exit", resolve));
        dk?.child.kill("SIGKILL");
        await exited;
        bed.startAgent("dk");
        await waitFor(
          "the process pod reaching the Docker pod through the new agent's nodeserver",
          () =>
            bed
              .run(m("p"), "curl", ["-sSf", "--max-time", "5", `http://${vipD}:8000/i.txt`])
              .catch(() => undefined),
          slow,
        );
        const after = await containers();
        t.equal(after.sidecar?.Id, sidecar?.Id, "the same sidecar");
        t.equal(after.app?.Id, app?.Id, "the same pod container");
      },
    );

    await t.test("the Job deleted, both containers and the host's end of the link go", async (t) => {
      const link = (await dockerRun("cat", "/sys/class/net/eth0/iflink")).trim();
      await bed.running.git.commit({ "mix.yaml": null });
      await waitFor("the pod's containers removed", async () => (await containers()).all.length === 0, slow);
      const { stdout } = await execFileAsync("ip", ["-o", "link"], { encoding: "utf8" });
      t.notOk(
        stdout.split("\n").some((line) => line.startsWith(`${link}: `)),
        "no host link left",
      );
    });
  },
);
