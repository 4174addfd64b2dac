// Ray on Kubernetes across two clusters (seed 000 §9; issue 24, item 3), on the shared real-node
// fleet, without Ray: a Job in a Domain whose `head` task (cluster k1, rlinf.io/ray-role: head,
// ray-total-nodes 2) and `worker` task (cluster k2, ray-role worker) are rendered by the real
// kubernetes runtime and run the agent's own ConfigMap scripts (ray_head.sh, ray_worker.sh,
// ray_check.py) with the env it injects, in an image where `ray` is a small stand-in
// (tests/helpers/ray-standin-image.ts: same command lines, a tiny HTTP "GCS" on the GCS port). So
// what is checked is ours: the scripts, the env, the ConfigMap (including head_address, which
// k2's agent fills from DomainPeer spec.tasks once the head has a virtual IP), the head Service,
// the worker's waits (for head_address, for its own virtual IP, for the head's GCS port), each node
// advertising its virtual IP, and the head waiting for both nodes before running its command; and
// the runtime's rlark-lo-addr init step, which puts each pod's virtual IP on its loopback (the
// stand-in binds it, as Ray's runtime env agent does, and exits when it cannot). The
// worker reaches the head over the Domain path: sidecar -> nodeserver -> hub relay -> nodeserver ->
// sidecar, which hands the connection to the head on 127.0.0.1. Real Ray is the demo
// hack/demo/ray-k8s-two-clusters (too heavy for CI).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, DiscoveryV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import t from "tap";
import { type DomainPeer, TASK_NAME_LABEL } from "../../../operators/api/index.ts";
import { type FleetCluster, realNodeFleetClusters, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml } from "../../helpers/job-yaml.ts";
import { buildRayStandinImage, RAY_STANDIN_IMAGE } from "../../helpers/ray-standin-image.ts";
import { type RealDomainSite, startRealDomainSites } from "../../helpers/real-domain-sites.ts";
import {
  importIntoRealNodes,
  podExec,
  RLARK_IMAGE,
  realRayTaskYaml,
  rlarkImageArchives,
  SIDECAR_IMAGE,
} from "../../helpers/real-pods.ts";
import { relayEngineOptions } from "../../helpers/relay-engine.ts";
import { relayedSince } from "../../helpers/relayed-bytes.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const clusters = realNodeFleetClusters();
const [k1, k2] = clusters as [FleetCluster, FleetCluster];
const imageDir = mkdtempSync(join(tmpdir(), "rlark-ray-standin-"));
t.teardown(() => rmSync(imageDir, { recursive: true, force: true }));
importIntoRealNodes(
  [...rlarkImageArchives(), buildRayStandinImage(imageDir)],
  [RLARK_IMAGE, SIDECAR_IMAGE, RAY_STANDIN_IMAGE],
);

const id = randomBytes(3).toString("hex");

/** A Ray task of Job `ray` on the real node of cluster `cluster`. */
const rayTask = (
  name: string,
  cluster: string,
  namespace: string,
  annotations: Record<string, string>,
  command?: string[],
) =>
  realRayTaskYaml({
    name,
    cluster,
    namespace,
    annotations,
    image: RAY_STANDIN_IMAGE,
    ...(command ? { command } : {}),
  });

// The head's command, run by ray_head.sh once both nodes have joined: a "driver" that lists the
// cluster's nodes through the ray module (address="auto", as a Ray driver in the head pod does).
const DRIVER = [
  "import json, os, ray",
  'ray.init(address="auto", _node_ip_address=os.environ["RLARK_RAY_NODE_IP"])',
  'print("driver nodes:", json.dumps(sorted(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"])), flush=True)',
].join("\n");
const HEAD_COMMAND = ["sh", "-c", `python3 -c '${DRIVER}' && exec sleep 2147483647`];

interface Call {
  argv: string[];
  env: Record<string, string>;
}

t.test(
  "a Ray head in k1 and a worker in k2 form a cluster over Domain IPs with the agent's scripts",
  async (t) => {
    const ns1 = await testNamespace(t, k1.kubeConfig, "real-ray");
    const ns2 = await testNamespace(t, k2.kubeConfig, "real-ray");
    const files = {
      "clusters.yaml": `${clusterYaml("k1", "kubernetes")}---\n${clusterYaml("k2", "kubernetes")}`,
      "domains.yaml": domainYaml("raynet", "10.78.0.0/24"),
      "ray.yaml": jobYaml(
        "ray",
        [
          rayTask(
            "head",
            "k1",
            ns1,
            { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "2" },
            HEAD_COMMAND,
          ),
          rayTask("worker", "k2", ns2, {
            "rlinf.io/ray-role": "worker",
            "rlinf.io/ray-head-task-name": "head",
          }),
        ],
        { domain: "raynet" },
      ),
    };
    const { hub } = await startHubOnGit(t, { files, domainRelay: "127.0.0.1:0", ...relayEngineOptions() });
    for (const name of ["k1", "k2"])
      await waitFor(
        `Cluster ${name} from git`,
        async () => hub.store.get("Cluster", undefined, name),
        onKube,
      );
    const sites: [RealDomainSite, RealDomainSite] = [
      { name: "k1", cluster: k1, namespace: ns1 },
      { name: "k2", cluster: k2, namespace: ns2 },
    ];
    const relayedBefore = hub.domainRelay?.stats().relayedBytes ?? 0;
    await startRealDomainSites(t, hub, sites, id);

    const core = (kc: KubeConfig) => kc.makeApiClient(CoreV1Api);
    const running = async (site: RealDomainSite, task: string): Promise<V1Pod | undefined> => {
      const { items } = await core(site.cluster.kubeConfig).listNamespacedPod({
        namespace: site.namespace,
        labelSelector: `${TASK_NAME_LABEL}=${task}`,
      });
      return items.find(
        (p) => !p.metadata?.deletionTimestamp && p.status?.containerStatuses?.some((c) => c.state?.running),
      );
    };
    const headPod = await waitFor(
      "the head's pod running on k1's real node",
      () => running(sites[0], "ray-head"),
      onKube,
    );
    const workerPod = await waitFor(
      "the worker's pod running on k2's real node",
      () => running(sites[1], "ray-worker"),
      onKube,
    );
    const vip = (cluster: string, pod: V1Pod) =>
      waitFor(
        `${pod.metadata?.name}'s virtual IP`,
        async () => {
          const peer = await hub.store.get<DomainPeer>("DomainPeer", `agent-${cluster}`, "raynet");
          return peer?.spec.pods?.find((p) => p.name === pod.metadata?.name)?.ip;
        },
        onKube,
      );
    const headVip = await vip("k1", headPod);
    const workerVip = await vip("k2", workerPod);
    const inPod = (site: RealDomainSite, pod: V1Pod, command: string[]) =>
      podExec(
        site.cluster.kubeConfig,
        { namespace: site.namespace, name: pod.metadata?.name as string, container: "main" },
        command,
      );
    const logs = (site: RealDomainSite, pod: V1Pod) =>
      core(site.cluster.kubeConfig).readNamespacedPodLog({
        namespace: site.namespace,
        name: pod.metadata?.name as string,
        container: "main",
      });

    await t.test(
      "each pod's virtual IP is on its loopback, put there by the runtime's init step, and Ray binds it",
      async (t) => {
        for (const [site, pod, ip] of [
          [sites[0], headPod, headVip],
          [sites[1], workerPod, workerVip],
        ] as const) {
          const name = pod.metadata?.name;
          const lo = await inPod(site, pod, ["ip", "-4", "addr", "show", "dev", "lo"]);
          t.match(lo.stdout, new RegExp(`inet ${ip.replace(/\./g, "\\.")}/32 `), `${name}: ${ip}/32 on lo`);
          const bound = await waitFor(
            `${name}: the stand-in's agent listening`,
            async () =>
              (await inPod(site, pod, ["cat", "/tmp/ray/agent_address"])).stdout.trim() || undefined,
            onKube,
          );
          t.match(
            bound,
            new RegExp(`^${ip.replace(/\./g, "\\.")}:[1-9][0-9]*$`),
            `${name}: Ray's agent bound ${ip}`,
          );
          const fresh = await core(site.cluster.kubeConfig).readNamespacedPod({
            namespace: site.namespace,
            name: name as string,
          });
          const init = fresh.status?.initContainerStatuses?.find((c) => c.name === "rlark-lo-addr");
          t.equal(init?.state?.terminated?.exitCode, 0, `${name}: rlark-lo-addr ran and exited 0`);
          t.notOk(
            fresh.spec?.containers.some((c) => c.securityContext?.capabilities?.add?.length),
            `${name}: the Ray container has no capability of its own`,
          );
          const initLog = await core(site.cluster.kubeConfig).readNamespacedPodLog({
            namespace: site.namespace,
            name: name as string,
            container: "rlark-lo-addr",
          });
          t.match(initLog, `lo-addr: ${ip}/32 on lo`, `${name}: the init step's log names the address`);
        }
      },
    );

    await t.test(
      "the head runs its command once both nodes joined; the driver sees both virtual IPs",
      async (t) => {
        const line = await waitFor(
          "the head's driver output",
          async () => /driver nodes: (.*)/.exec(await logs(sites[0], headPod))?.[1],
          onKube,
        );
        t.same(JSON.parse(line), [headVip, workerVip].sort(), "the head's and the worker's virtual IPs");
      },
    );

    await t.test(
      "the worker found the head's virtual IP in its ConfigMap and joined over the Domain",
      async (t) => {
        const headAddress = `${headVip}:6379`;
        const file = await inPod(sites[1], workerPod, ["cat", "/etc/rlark/ray/head_address"]);
        t.equal(file.stdout.trim(), headAddress, "k2's agent wrote head_address from DomainPeer spec.tasks");
        t.notOk(
          workerPod.spec?.containers[0]?.env?.find((e) => e.name === "RLARK_HEAD_ADDRESS")?.value,
          "no head Service name, which k2 could not resolve (the API drops an empty value)",
        );
        const calls = (await inPod(sites[1], workerPod, ["cat", "/tmp/ray/calls.jsonl"])).stdout
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Call);
        t.equal(calls.length, 1, "ray start ran once");
        t.same(
          calls[0]?.argv,
          ["start", `--address=${headAddress}`, `--node-ip-address=${workerVip}`, "--block"],
          "joined the head's virtual IP, advertising its own, in the foreground",
        );
        t.match(calls[0]?.env, {
          RLARK_RAY_ROLE: "worker",
          RLARK_RAY_HEAD_TASK: "ray-head",
          RLARK_HEAD_ADDRESS: headAddress,
          RLARK_RAY_NODE_IP: workerVip,
          RLARK_RAY_PORT: "6379",
          RLARK_DOMAIN_IP_FILE: "/var/run/rlark-domain/ip",
          RLARK_TASK: "ray-worker",
          RLARK_JOB: "ray",
        });
        t.ok(await relayedSince(hub.domainRelay, relayedBefore), "the hub's domain relay carried it");
      },
    );

    await t.test(
      "the head started with its ports and virtual IP and took the join through its sidecar",
      async (t) => {
        const calls = (await inPod(sites[0], headPod, ["cat", "/tmp/ray/calls.jsonl"])).stdout
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Call);
        t.same(
          calls[0]?.argv,
          [
            "start",
            "--head",
            "--port=6379",
            "--dashboard-host=0.0.0.0",
            "--dashboard-port=8265",
            "--metrics-export-port=8080",
            `--node-ip-address=${headVip}`,
          ],
          "ray_head.sh's command line (not --block: the head has a command to run)",
        );
        t.match(calls[0]?.env, {
          RLARK_RAY_ROLE: "head",
          RLARK_RAY_TOTAL_NODES: "2",
          RLARK_RAY_NODE_IP: headVip,
        });
        const joins = (await inPod(sites[0], headPod, ["cat", "/tmp/ray/joins.jsonl"])).stdout
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { node: string; peer: string });
        t.same(
          joins,
          [{ node: workerVip, peer: "127.0.0.1" }],
          "the worker's join arrived from the sidecar (127.0.0.1), not from k2's pod network",
        );
      },
    );

    await t.test(
      "the head Service in k1 selects the head pod on the GCS, dashboard and metrics ports",
      async (t) => {
        const service = await core(k1.kubeConfig).readNamespacedService({
          namespace: ns1,
          name: "ray-head-ray-head",
        });
        t.same(
          service.spec?.ports?.map((p) => [p.name, p.port]),
          [
            ["gcs", 6379],
            ["dashboard", 8265],
            ["metrics", 8080],
          ],
        );
        t.equal(service.spec?.publishNotReadyAddresses, true);
        const endpoints = await waitFor(
          "the head Service's EndpointSlice listing the head pod",
          async () => {
            const { items } = await k1.kubeConfig.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
              namespace: ns1,
              labelSelector: "kubernetes.io/service-name=ray-head-ray-head",
            });
            const addresses = items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
            return addresses.includes(headPod.status?.podIP as string) ? items : undefined;
          },
          onKube,
        );
        t.ok(
          endpoints.some((s) => s.ports?.some((p) => p.name === "gcs" && p.port === 6379)),
          "the GCS port of the head pod",
        );
        const services = await core(k2.kubeConfig).listNamespacedService({ namespace: ns2 });
        t.notOk(
          services.items.some((s) => s.metadata?.name?.endsWith("-ray-head")),
          "the worker's cluster has no head Service",
        );
      },
    );
  },
);
