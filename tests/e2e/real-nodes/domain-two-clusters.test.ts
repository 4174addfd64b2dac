// The seeds' Domain scenario on real pods across two clusters (issue 24, item 2): the shared
// real-node fleet's two clusters, one real node each; per cluster a kubernetes-runtime agent
// running with fleet/agent's RBAC, and fleet/nodeserver's DaemonSet of rlark/sidecar (built here and
// imported into the nodes' containerd) on the real node; a hub on git with its Domain relay. Pods
// of a Job in a Domain get the injected rlark-net-init (iptables in the real pod's netns) and the
// sidecar; an unmodified busybox nc in a pod of cluster 1 reaches a pod of cluster 2 by its
// virtual IP (sidecar -> nodeserver pod -> hub relay -> nodeserver pod -> sidecar); a pod of
// another Domain cannot, and a pod of no Domain gets no redirect; two pods of cluster 1 reach each
// other without the hub; killing cluster 2's nodeserver pod mid-stream ends the stream (the client returns),
// the DaemonSet starts another and new connections work.
//
// One host for two "machines": each real node has its own /run/rlark (hack/kube/real-nodes.ts
// mounts a folder of the node's there, in the node's mount namespace), so the DaemonSet's socket
// directory is the shipped one; but the nodes share the host's network, so each cluster's
// nodeserver serves its stats on a port of its own (--stats-listen, and the agent's
// nodeserverStatsPort). Its pods reach the API server at 127.0.0.1 (no kube-proxy here for the
// kubernetes Service's ClusterIP).
import { randomBytes } from "node:crypto";
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import t from "tap";
import { REAL_NODE_IMAGES } from "../../../hack/kube/images.ts";
import { REAL_NODE_LABEL } from "../../../hack/kube/real-nodes.ts";
import { type DomainPeer, TASK_NAME_LABEL } from "../../../operators/api/index.ts";
import { type FleetCluster, realNodeFleetClusters, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml } from "../../helpers/job-yaml.ts";
import { nodeserverPod, type RealDomainSite, startRealDomainSites } from "../../helpers/real-domain-sites.ts";
import {
  importIntoRealNodes,
  podExec,
  RLARK_IMAGE,
  rlarkImageArchives,
  SIDECAR_IMAGE,
} from "../../helpers/real-pods.ts";
import { relayEngineOptions } from "../../helpers/relay-engine.ts";
import { relayedSince } from "../../helpers/relayed-bytes.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const clusters = realNodeFleetClusters();
const [k1, k2] = clusters as [FleetCluster, FleetCluster];
importIntoRealNodes(rlarkImageArchives(), [RLARK_IMAGE, SIDECAR_IMAGE]);

const id = randomBytes(3).toString("hex");

/** A busybox task on the real node of cluster `cluster`, running `script`. */
const busyboxTask = (name: string, cluster: string, namespace: string, script: string) => `    - name: ${name}
      role: Actor
      agentType: Kubernetes
      clusterSelector: { matchLabels: { region: ${cluster} } }
      kubernetes:
        workload:
          kind: Deployment
          replicas: 1
          template:
            namespace: ${namespace}
            spec:
              nodeSelector: { ${REAL_NODE_LABEL}: "true" }
              terminationGracePeriodSeconds: 1
              containers:
                - name: main
                  image: ${REAL_NODE_IMAGES.busybox}
                  imagePullPolicy: Never
                  command: ["sh", "-c", ${JSON.stringify(script)}]
`;

// b serves a page on :8080 and, as a CGI of busybox httpd, an endless stream (about 3 MB/s)
const SERVE_B = [
  "mkdir -p /www/cgi-bin",
  "echo hello-from-b > /www/index.html",
  "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\nwhile :; do yes stream-of-b | head -c 65536; usleep 20000; done\\n' > /www/cgi-bin/stream",
  "chmod +x /www/cgi-bin/stream",
  "exec httpd -f -p 8080 -h /www",
].join(" && ");
const SERVE_C = "mkdir -p /www && echo hello-from-c > /www/index.html && httpd -f -p 8081 -h /www";

t.test("a Domain's pods on real nodes of two clusters talk by virtual IP through the hub", async (t) => {
  const ns1 = await testNamespace(t, k1.kubeConfig, "real-domain");
  const ns2 = await testNamespace(t, k2.kubeConfig, "real-domain");
  const files = {
    "clusters.yaml": `${clusterYaml("k1", "kubernetes")}---\n${clusterYaml("k2", "kubernetes")}`,
    "domains.yaml": `${domainYaml("lab", "10.77.0.0/24")}---\n${domainYaml("other", "10.77.1.0/24")}`,
    "lab.yaml": jobYaml(
      "lab",
      [
        busyboxTask("a", "k1", ns1, "sleep 2147483647"),
        busyboxTask("c", "k1", ns1, SERVE_C),
        busyboxTask("b", "k2", ns2, SERVE_B),
      ],
      { domain: "lab" },
    ),
    "x.yaml": jobYaml("x", [busyboxTask("x", "k1", ns1, "sleep 2147483647")], { domain: "other" }),
    "solo.yaml": jobYaml("solo", [busyboxTask("solo", "k1", ns1, "sleep 2147483647")]),
  };
  const { hub } = await startHubOnGit(t, { files, domainRelay: "127.0.0.1:0", ...relayEngineOptions() });
  for (const name of ["k1", "k2"])
    await waitFor(`Cluster ${name} from git`, async () => hub.store.get("Cluster", undefined, name), onKube);

  const sites: [RealDomainSite, RealDomainSite] = [
    { name: "k1", cluster: k1, namespace: ns1 },
    { name: "k2", cluster: k2, namespace: ns2 },
  ];
  await startRealDomainSites(t, hub, sites, id);
  const core = (kc: KubeConfig) => kc.makeApiClient(CoreV1Api);
  const ready = async (kc: KubeConfig, namespace: string, task: string) => {
    const { items } = await core(kc).listNamespacedPod({
      namespace,
      labelSelector: `${TASK_NAME_LABEL}=${task}`,
    });
    return items.find(
      (p) => !p.metadata?.deletionTimestamp && p.status?.containerStatuses?.every((c) => c.ready),
    );
  };
  const pods: Record<string, V1Pod> = {};
  for (const [task, site] of [
    ["lab-a", sites[0]],
    ["lab-c", sites[0]],
    ["lab-b", sites[1]],
    ["x-x", sites[0]],
    ["solo-solo", sites[0]],
  ] as const) {
    pods[task] = await waitFor(
      `${task} running on ${site.name}'s real node`,
      () => ready(site.cluster.kubeConfig, site.namespace, task),
      onKube,
    );
  }
  for (const site of sites)
    await waitFor(
      `${site.name}'s nodeserver pod running`,
      () => nodeserverPod(site.cluster.kubeConfig, site.namespace),
      onKube,
    );
  t.same(
    pods["lab-a"]?.spec?.initContainers?.map((c) => c.name),
    ["rlark-net-init", "rlark-sidecar"],
    "a Domain pod has the init container and the sidecar",
  );
  t.same(pods["solo-solo"]?.spec?.initContainers ?? [], [], "a pod of no Domain has neither");

  const vip = async (cluster: string, task: string, domain = "lab") =>
    waitFor(
      `${task}'s virtual IP`,
      async () => {
        const peer = await hub.store.get<DomainPeer>("DomainPeer", `agent-${cluster}`, domain);
        return peer?.spec.pods?.find((p) => p.name === pods[task]?.metadata?.name)?.ip;
      },
      onKube,
    );
  const vipB = await vip("k2", "lab-b");
  const vipC = await vip("k1", "lab-c");
  const inPod = (task: string, site: RealDomainSite, command: string[], timeoutMs?: number) =>
    podExec(
      site.cluster.kubeConfig,
      { namespace: site.namespace, name: pods[task]?.metadata?.name as string, container: "main" },
      command,
      timeoutMs,
    );
  // busybox's nc speaking HTTP/1.0 (its static wget crashes in getaddrinfo in an image without
  // glibc's NSS modules); stdin stays open a moment, since nc quits at its end. The body, or "".
  const get = async (task: string, ip: string, port: number, path = "/") => {
    const r = await inPod(task, sites[0], [
      "sh",
      "-c",
      `(printf 'GET ${path} HTTP/1.0\\r\\n\\r\\n'; sleep 2) | nc -w 5 ${ip} ${port}`,
    ]);
    const at = r.stdout.indexOf("\r\n\r\n");
    return { ...r, body: r.code === 0 && at >= 0 ? r.stdout.slice(at + 4) : "" };
  };
  const page = (task: string, ip: string, port: number) => async () =>
    (await get(task, ip, port)).body || undefined;

  await t.test("busybox nc in k1 reaches b in k2 by its virtual IP, through the hub", async (t) => {
    const before = hub.domainRelay?.stats().relayedBytes ?? 0;
    const got = await waitFor("b's page from a", page("lab-a", vipB, 8080), onKube);
    t.equal(got, "hello-from-b\n", "the page b serves");
    t.ok(await relayedSince(hub.domainRelay, before), "the hub relayed it");
  });

  await t.test("same-cluster pods reach each other without the hub", async (t) => {
    await waitFor("no connection left on the relay", () => hub.domainRelay?.stats().joined === 0, onKube);
    const before = hub.domainRelay?.stats().relayedBytes;
    const got = await waitFor("c's page from a", page("lab-a", vipC, 8081), onKube);
    t.equal(got, "hello-from-c\n");
    t.equal(hub.domainRelay?.stats().relayedBytes, before, "the hub relayed nothing");
  });

  await t.test("a pod of another Domain is refused", async (t) => {
    const other = await get("x-x", vipB, 8080);
    t.equal(other.body, "", `x (Domain other) gets nothing from b (${other.stderr.trim() || "closed"})`);
    t.notMatch(other.stdout, /hello-from-b/);
    // A pod of no Domain has no redirect (asserted above): virtual IPs are routed nowhere for it,
    // and its packets would go to the host's default route, so it is sent none here.
  });

  await t.test("killing k2's nodeserver pod mid-stream ends the stream; its successor serves", async (t) => {
    const k2Site = sites[1];
    const old = await waitFor(
      "k2's nodeserver pod",
      () => nodeserverPod(k2Site.cluster.kubeConfig, k2Site.namespace),
      onKube,
    );
    // the client writes what it gets to a file and says how it ended; its stdin (a FIFO) stays
    // open until then, since busybox nc quits at its end
    const stream = inPod(
      "lab-a",
      sites[0],
      [
        "sh",
        "-c",
        `rm -f /tmp/in /tmp/got; mkfifo /tmp/in; (printf 'GET /cgi-bin/stream HTTP/1.0\\r\\n\\r\\n'; exec sleep 2147483647) > /tmp/in & w=$!; nc ${vipB} 8080 < /tmp/in > /tmp/got; echo "exit $?"; kill $w; wc -c < /tmp/got`,
      ],
      180_000,
    );
    await waitFor(
      "the stream flowing",
      async () => {
        const r = await inPod("lab-a", sites[0], ["sh", "-c", "wc -c < /tmp/got"]);
        return Number(r.stdout.trim()) > 200_000;
      },
      onKube,
    );
    await core(k2Site.cluster.kubeConfig).deleteNamespacedPod({
      namespace: k2Site.namespace,
      name: old.metadata?.name as string,
      gracePeriodSeconds: 0,
    });
    const ended = await stream;
    const [status, bytes] = ended.stdout.trim().split("\n");
    t.match(status, /^exit \d+$/, `the client returned when the stream broke (${status})`);
    t.ok(Number(bytes) > 200_000, `having got ${bytes} bytes`);
    const successor = await waitFor(
      "a new nodeserver pod from the DaemonSet",
      async () => {
        const p = await nodeserverPod(k2Site.cluster.kubeConfig, k2Site.namespace);
        return p && p.metadata?.uid !== old.metadata?.uid ? p : undefined;
      },
      onKube,
    );
    t.not(successor.metadata?.name, old.metadata?.name, "the DaemonSet made another pod");
    await waitFor(
      "the DaemonSet whole again",
      async () =>
        (
          await k2Site.cluster.kubeConfig
            .makeApiClient(AppsV1Api)
            .readNamespacedDaemonSet({ namespace: k2Site.namespace, name: "rlark-nodeserver" })
        ).status?.numberReady === 1,
      onKube,
    );
    const again = await waitFor(
      "b's page from a through the new nodeserver",
      page("lab-a", vipB, 8080),
      onKube,
    );
    t.equal(again, "hello-from-b\n", "new connections work");
  });
});
