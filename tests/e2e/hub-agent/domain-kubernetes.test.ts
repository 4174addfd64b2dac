// A Domain on a kubernetes-runtime agent, with a real hub and a real control plane (hack/kube, kwok
// nodes): the pods of a Job in the Domain get contract B's init container and sidecar (applied by
// server-side apply, so the API server validated them) and run on the kwok nodes; a Job outside
// the Domain gets neither; the hub's Pod mirrors carry the virtual IPs of the Domain's DomainPeer;
// the Secret rlark-domain-peers follows the DomainPeer in the nodeserver's own PeersState shape,
// the nodeserver's --peers-secret source (network/peers-from-secret.ts) sees each change, and a
// real `rlark nodeserver --peers-secret` process answers /get_ip from it.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isDeepStrictEqual, promisify } from "node:util";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import t from "tap";
import { type DomainPeer, type PeersState, type Pod, TASK_NAME_LABEL } from "../../../operators/api/index.ts";
import { peersFromSecret } from "../../../operators/network/peers-from-secret.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { startSecretNodeserver } from "../../helpers/nodeserver-process.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc, kubeconfig: kubeconfigFile } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const CIDR = "10.0.7.0/24";
const execFileAsync = promisify(execFile);

function repository(namespace: string, replicas: number): Record<string, string> {
  const trainer = trainerTaskYaml({ namespace, replicas, resources: `{ requests: { cpu: "100m" } }` });
  return {
    "clusters.yaml": clusterYaml("gpu", "kubernetes"),
    "domain.yaml": domainYaml("lab", CIDR),
    "net.yaml": jobYaml("net", [trainer], { domain: "lab" }),
    "solo.yaml": jobYaml("solo", [
      trainerTaskYaml({ namespace, replicas: 1, resources: `{ requests: { cpu: "100m" } }` }),
    ]),
  };
}

const running = async (namespace: string, task: string, count: number): Promise<V1Pod[] | undefined> => {
  const { items } = await core.listNamespacedPod({ namespace, labelSelector: `${TASK_NAME_LABEL}=${task}` });
  const up = items.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
  return up.length === count ? up : undefined;
};

/** The state the next `iterator.next()` yields that satisfies `check`. */
/**
 * The first state the source yields for which `check` holds. Bounded: a source that stops
 * yielding fails the test with a reason instead of holding it until tap's timeout.
 */
async function nextState(
  iterator: AsyncIterator<PeersState>,
  check: (s: PeersState) => Promise<boolean>,
  within = 120_000,
): Promise<PeersState> {
  const deadline = Date.now() + within;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the peers source yielded no matching state in ${within} ms`)),
        Math.max(0, deadline - Date.now()),
      );
    });
    const { value, done } = await Promise.race([iterator.next(), timeout]).finally(() => clearTimeout(timer));
    if (done) throw new Error("the peers source ended");
    if (await check(value)) return value;
  }
}

t.test("a Domain's pods get the sidecar and their virtual IPs; the peers Secret follows", async (t) => {
  const namespace = await testNamespace(t, kc, "domain-kube");
  const { git, hub } = await startHubOnGit(t, { files: repository(namespace, 2) });
  await waitFor(
    "the Domain from git",
    async () => (await hub.store.get("Domain", undefined, "lab")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", { kubeConfig: kc, namespace, reportIntervalMs: 1_000 });

  const netPods = await waitFor(
    "2 Running pods of net-trainer on kwok nodes",
    () => running(namespace, "net-trainer", 2),
    onKube,
  );
  for (const pod of netPods) {
    const inits = pod.spec?.initContainers ?? [];
    t.same(
      inits.map((c) => c.name),
      ["rlark-net-init", "rlark-sidecar"],
      `${pod.metadata?.name}: the init container and the sidecar`,
    );
    t.same(
      inits[0]?.env?.find((e) => e.name === "RLARK_DOMAIN_CIDR")?.value,
      CIDR,
      "the init container redirects the Domain's CIDR",
    );
    t.equal(inits[1]?.restartPolicy, "Always", "the sidecar runs alongside the Task's container");
    t.same(pod.spec?.volumes?.find((v) => v.name === "rlark-nodeserver")?.hostPath, {
      path: "/var/run/rlark",
      type: "DirectoryOrCreate",
    });
  }
  const [solo] = await waitFor("the solo pod Running", () => running(namespace, "solo-trainer", 1), onKube);
  t.same(solo?.spec?.initContainers ?? [], [], "a pod outside any Domain gets no sidecar");

  // the Domain controller allocates, the DomainPeer reaches the agent, the mirrors carry the IPs
  const peerPods = async (count: number) => {
    const peer = await hub.store.get<DomainPeer>("DomainPeer", "agent-gpu", "lab");
    return peer?.spec.pods?.length === count ? peer.spec : undefined;
  };
  const spec = await waitFor("a DomainPeer with 2 pods", () => peerPods(2), onKube);
  const mirrors = await waitFor(
    "both Pod mirrors with their domainIP",
    async () => {
      const { items } = await hub.store.list<Pod>("Pod", { namespace: "agent-gpu" });
      const withIP = items.filter((p) => p.spec.task === "net-trainer" && p.status?.domainIP);
      return withIP.length === 2 ? withIP : undefined;
    },
    onKube,
  );
  for (const mirror of mirrors) {
    const route = spec.pods?.find((p) => p.name === mirror.metadata.name);
    t.equal(mirror.status?.domainIP, route?.ip, `${mirror.metadata.name}: the IP its DomainPeer gives it`);
    t.match(mirror.status?.domainIP, /^10\.0\.7\./);
  }
  const soloMirror = await hub.store.list<Pod>("Pod", { namespace: "agent-gpu" });
  t.notOk(
    soloMirror.items.find((p) => p.spec.task === "solo-trainer")?.status?.domainIP,
    "the solo pod has no virtual IP",
  );

  // the nodeserver's source, through the API server as the DaemonSet would read it
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const states = peersFromSecret({
    kubeConfig: kc,
    namespace,
    name: "rlark-domain-peers",
    signal: abort.signal,
  });
  const iterator = states[Symbol.asyncIterator]();
  // The DomainPeer as the store holds it when the state arrives: its spec may have moved on since
  // the 2 pods were first seen (a pod's route filled in), and the Secret follows the newest one.
  // Without spec.tasks: the agent keeps those (a Ray worker's head address), nodeservers need none.
  const sameAsStore = (pods: number) => async (s: PeersState) => {
    const current = await peerPods(pods);
    if (current === undefined) return false;
    const { tasks: _tasks, ...routes } = current;
    return isDeepStrictEqual(s.domains, [{ domain: "lab", ...routes }]);
  };
  const first = await nextState(iterator, sameAsStore(2));
  t.equal(first.globalNamespace, "agent-gpu", "the Secret holds the cluster's peers state");
  t.same(
    first.domains.map((d) => d.domain),
    ["lab"],
    "with the Domain's DomainPeer spec",
  );
  t.equal(first.domains[0]?.key, spec.key, "and the Domain's key, which is why it is a Secret");

  // the nodeserver itself, as the DaemonSet runs it, reading the same Secret
  const socketDir = mkdtempSync(path.join(tmpdir(), "rlark-ns-secret-"));
  startSecretNodeserver(t, { socketDir, namespace, kubeconfig: kubeconfigFile });
  t.teardown(() => rmSync(socketDir, { recursive: true, force: true }));
  const route = first.domains[0]?.pods?.[0];
  const answer = await waitFor(
    "the nodeserver answers /get_ip from the Secret",
    async () => {
      const { stdout } = await execFileAsync("curl", [
        "-s",
        "--unix-socket",
        path.join(socketDir, "nodeserver.sock"),
        `http://nodeserver/get_ip?pod=${route?.namespace}/${route?.name}`,
      ]).catch(() => ({ stdout: "" }));
      return stdout.includes('"ip"') && (JSON.parse(stdout) as { ip: string; domain: string });
    },
    onKube,
  );
  t.same(answer, { ip: route?.ip, prefixLength: 24, domain: "lab" }, "the pod's virtual IP");

  await git.commit(repository(namespace, 3));
  await waitFor("a DomainPeer with 3 pods", () => peerPods(3), onKube);
  const seen = await nextState(iterator, sameAsStore(3));
  t.equal(seen.domains[0]?.pods?.length, 3, "the --peers-secret source sees the third pod's route");
  const third = seen.domains[0]?.pods?.find((p) => !first.domains[0]?.pods?.some((q) => q.name === p.name));
  await waitFor(
    "the nodeserver process knows the third pod",
    async () =>
      (
        await execFileAsync("curl", [
          "-s",
          "--unix-socket",
          path.join(socketDir, "nodeserver.sock"),
          `http://nodeserver/get_ip?pod=${third?.namespace}/${third?.name}`,
        ]).catch(() => ({ stdout: "" }))
      ).stdout.includes(`"${third?.ip}"`),
    onKube,
  );
  t.pass("the nodeserver process follows the Secret");
  abort.abort();
  t.same(await iterator.next(), { value: undefined, done: true }, "the source ends when aborted");
});
