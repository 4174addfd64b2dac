// The agent: holds the desired set the hub hands over its tunnel, drives a runtime with it, and
// reports what the runtime observes. One per cluster (kubernetes runtime) or machine (process).
import { randomBytes, randomUUID } from "node:crypto";
import packageJson from "../../package.json" with { type: "json" };
import {
  domainTasksFrom,
  namespaceFor,
  type PeersState,
  type PingMeshClusterPair,
  type PingMeshStatus,
  peersStateFrom,
} from "../api/index.ts";
import { capabilityFromCondition } from "../lib/capability-condition.ts";
import { readCapabilityStatuses } from "../lib/capability-status.ts";
import { type Clock, every, systemClock, type TimerId } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import {
  BROWSE_PURPOSE,
  type Capability,
  type CredentialStore,
  type Delta,
  DRY_RUN_PURPOSE,
  type DryRunAnswer,
  type DryRunRequest,
  MAX_BROWSE_ANSWER_BYTES,
  MAX_DRY_RUN_ANSWER_BYTES,
  parseBrowseRequest,
  parseDryRunRequest,
  requestHandler,
  type Snapshot,
  type StreamHandler,
  type TunnelClient,
} from "../lib/tunnel/index.ts";
import { type AccessHop, type HopIdentity, startAccessHop } from "./access/hop.ts";
import { type AccessOptions, accessStreams } from "./access/index.ts";
import { agentCapabilities } from "./capabilities.ts";
import { type DesiredObject, DesiredObjects } from "./desired-objects.ts";
import { ensureAgentCredentials } from "./enroll.ts";
import { type AgentGroupOptions, startAgentGroup } from "./group.ts";
import { GroupPoller, nodeserverGroup } from "./nodeserver-group.ts";
import { NodePingMeshPoller } from "./nodeserver-pingmesh.ts";
import { StatsPoller } from "./nodeserver-stats.ts";
import { podLogStream } from "./pod-log-stream.ts";
import { PROXY_PURPOSE, podPortStream } from "./pod-port-stream.ts";
import {
  addonStatusObjects,
  bundleStatusObjects,
  domainIPs,
  lingeringTasks,
  nodeObject,
  podObject,
  taskStatusObject,
  trafficObjects,
} from "./report.ts";
import type { NodeOverlay, Runtime, RuntimeTask } from "./runtimes/types.ts";
import { startAgentTunnel } from "./tunnel-client.ts";

/** The first pause before a failed apply of the desired set is tried again, and the longest. */
const APPLY_RETRY_FIRST_MS = 1_000;
const APPLY_RETRY_MAX_MS = 30_000;

export interface AgentOptions {
  /** host:port of the hub's SSH endpoint. */
  hub: string;
  credentials: CredentialStore;
  /** Bootstrap token and pinned CA hash, needed only on first start. */
  token?: string;
  caHash?: string;
  runtime: Runtime;
  runtimeKind: "process" | "kubernetes" | "docker";
  /** How often to report even when nothing changed. */
  reportIntervalMs?: number;
  /** Answers plans' `dry-run` requests (the kubernetes runtime: runtimes/kubernetes/dry-run.ts). */
  dryRun?: (request: DryRunRequest) => Promise<DryRunAnswer>;
  logger: Logger;
  /**
   * Where this machine's components (device plugin, controllers) write their capability states
   * (lib/capability-status.ts); each report carries them after the runtime's own.
   */
  capabilityDir?: string;
  /** Drives the report timers and the tunnel's reconnect backoff; tests pass a FakeClock. */
  clock?: Clock;
  /**
   * Unix sockets of the nodeservers whose GET /stats give the Domain page its live figures (the
   * process runtime's own nodeserver). None by default.
   */
  nodeserverSockets?: readonly string[];
  /** How often those are read. Default 5 s. */
  statsIntervalMs?: number;
  /**
   * Kubernetes runtime: the port every node's nodeserver serves GET /stats on over TCP
   * (`rlark nodeserver --stats-listen`). The agent polls each node's InternalIP there with a
   * bearer token of its own making, which it hands the nodeservers in the peers state.
   */
  nodeserverStatsPort?: number;
  /**
   * Kubernetes runtime, with nodeserverStatsPort: the UDP port of the nodeservers' AgentGroup
   * members (`rlark nodeserver --group-listen`). The peers state then carries the group key and
   * the nodes' InternalIPs at this port as seeds, and the agent reports the group as a
   * nodeserver's GET /group gives it (agent/nodeserver-group.ts).
   */
  nodeserverGroupPort?: number;
  /**
   * The hub's domain relay (`host:port`), which the nodeservers dial with the Domains'
   * certificates; with it the peers state names the relay and the hub CA the agent pinned.
   */
  domainRelay?: string;
  /**
   * Called with the nodeservers' peers state on every desired-set change: the process runtime's
   * agent writes its nodeserver's peers.json from it. A throw counts as a failed apply: the agent
   * calls it again with the same state on its apply retry (1 s doubling to 30 s).
   */
  onPeersState?: (state: PeersState) => void;
  /** The programs access sessions run (sftp-server, the pty helper's Python). Defaults: the system's. */
  access?: AccessOptions;
  /**
   * The rlark-net binary of the agent's byte hop for forwards (ADR 0011): started and restarted
   * by the agent; a forward the hub offers over the hop then carries no byte through this process.
   * Absent: every forward's bytes are served on the tunnel.
   */
  accessHop?: string;
  /**
   * This machine's AgentGroup member (agent/group.ts): where it listens and whom it joins; its
   * key comes from the agent's credentials. Absent: no member, network-probe STOPPED.
   */
  group?: Omit<AgentGroupOptions, "cluster" | "secret" | "clock" | "logger" | "onChange">;
  /**
   * The cluster's PingMesh figures as they are now (Cluster status.pingMesh), carried by each
   * report; undefined while there are none (docs/pingmesh.md).
   */
  pingMesh?: () => PingMeshStatus | undefined;
  /**
   * Kubernetes runtime, with nodeserverGroupPort: how a Node's labels give its topology. With it
   * (and without pingMesh) the agent polls the nodeservers' GET /pingmesh and reports their node
   * pairs (agent/nodeserver-pingmesh.ts); the cli passes network/pingmesh's topologyFromLabels.
   */
  nodeTopology?: (labels: Record<string, string>) => Record<string, string>;
}

/**
 * The report's pingMesh field, when there are figures: the mesh's own (`--pingmesh`), with the
 * nodeservers' probes of other clusters as clusterPairs where the mesh has none for a target.
 */
function pingMeshField(
  source: AgentOptions["pingMesh"],
  clusterPairs: readonly PingMeshClusterPair[],
  now: number,
): { pingMesh?: Record<string, unknown> } {
  const figures = source?.();
  if (clusterPairs.length === 0) return figures ? { pingMesh: { ...figures } } : {};
  const own = figures?.clusterPairs ?? [];
  const measured = new Set(own.map((p) => p.target));
  const merged = [...own, ...clusterPairs.filter((p) => !measured.has(p.target))].sort((a, b) =>
    a.target < b.target ? -1 : 1,
  );
  return {
    pingMesh: {
      ...(figures ?? { observedAt: new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z") }),
      clusterPairs: merged,
    },
  };
}

export interface Agent {
  cluster: string;
  tunnel: TunnelClient;
  /** The byte hop for forwards (`accessHop`), while it runs. */
  accessHop: AccessHop | undefined;
  /** Objects the hub wants on this cluster that passed their schema. */
  desired(): DesiredObject[];
  stop(): Promise<void>;
}

function streamsFor(options: AgentOptions): Record<string, StreamHandler> {
  const streams: Record<string, StreamHandler> = {
    logs: podLogStream(options.runtime),
    ...accessStreams(options.runtime, options.access),
    [PROXY_PURPOSE]: podPortStream(options.runtime),
  };
  const cluster = options.runtime.cluster;
  if (cluster) {
    // the request is checked here, on the agent, whatever the hub sent (lib/tunnel/browse.ts)
    streams[BROWSE_PURPOSE] = requestHandler(async (request) => cluster.browse(parseBrowseRequest(request)), {
      maxRequestBytes: 8192,
      maxResponseBytes: MAX_BROWSE_ANSWER_BYTES,
    });
  }
  const dryRun = options.dryRun;
  if (dryRun)
    streams[DRY_RUN_PURPOSE] = requestHandler(async (request) => dryRun(parseDryRunRequest(request)), {
      maxResponseBytes: MAX_DRY_RUN_ANSWER_BYTES,
    });
  return streams;
}

export async function startAgent(options: AgentOptions): Promise<Agent> {
  const clock = options.clock ?? systemClock;
  const { runtime, logger } = options;
  const credentials = await ensureAgentCredentials({
    store: options.credentials,
    hub: options.hub,
    ...(options.token ? { token: options.token } : {}),
    ...(options.caHash ? { caHash: options.caHash } : {}),
    now: () => clock.now(),
    onRetry: (error, delayMs) =>
      logger.warn("enrollment cut short; trying again with the same key", { error: error.message, delayMs }),
  });
  const cluster = credentials.cluster;
  const group = options.group
    ? await startAgentGroup({
        ...options.group,
        cluster,
        secret: credentials.privateKeyPem,
        clock,
        logger,
        // called only once gossip arrives, after scheduleReport below is defined
        onChange: () => scheduleReport(),
      })
    : undefined;
  const desired = new DesiredObjects(logger);
  let applyError: string | undefined;
  let applied = false;

  const tasks = (): RuntimeTask[] =>
    desired.tasks().filter((t) => runtime.agentTypes.includes(t.spec.agentType));

  const nodeOverlays = (): NodeOverlay[] =>
    desired.nodes().map(({ metadata, spec }) => ({
      name: metadata.name,
      labels: metadata.labels ?? {},
      annotations: metadata.annotations ?? {},
      ...(spec?.unschedulable === undefined ? {} : { unschedulable: spec.unschedulable }),
    }));

  // The agent's own (agent/capabilities.ts), then its machine's components', then its Nodes'.
  const capabilities = (): Capability[] => [
    ...agentCapabilities({
      runtime,
      runtimeKind: options.runtimeKind,
      ...(options.access ? { access: options.access } : {}),
      applied,
      ...(applyError ? { applyError } : {}),
      ...(group
        ? { networkProbe: group.capability }
        : groupPoller
          ? { networkProbe: () => groupPoller.capability() }
          : {}),
    }),
    ...componentCapabilities(),
    ...nodeCapabilities(),
  ];
  // Published on the Nodes by their device plugins (kubernetes runtime): "<node>/<component>".
  const nodeCapabilities = (): Capability[] =>
    runtime.observe().nodes.flatMap((node) =>
      (node.capabilityConditions ?? []).flatMap((condition) => {
        const capability = capabilityFromCondition(condition, clock.now());
        // the hub refuses a report with a name over 253 characters: cut rather than lose it
        return capability ? [{ ...capability, name: `${node.name}/${capability.name}`.slice(0, 253) }] : [];
      }),
    );
  const componentCapabilities = (): Capability[] => {
    if (!options.capabilityDir) return [];
    try {
      return readCapabilityStatuses(options.capabilityDir, clock.now());
    } catch (error) {
      return [
        {
          name: "components",
          health: "UNKNOWN",
          message: `${options.capabilityDir}: ${(error as Error).message}`,
        },
      ];
    }
  };

  // New at every start: only the nodeservers that read this agent's peers state learn it.
  const statsToken = options.nodeserverStatsPort ? randomBytes(32).toString("base64url") : undefined;
  const nodeIPs = (): string[] =>
    runtime
      .observe()
      .nodes.flatMap((n) => n.addresses.filter((a) => a.type === "InternalIP").map((a) => a.address));
  // The nodeservers' group (kubernetes runtime): its key and seeds go with the peers state.
  const groupPort = statsToken ? options.nodeserverGroupPort : undefined;
  const peersGroup = () =>
    groupPort ? nodeserverGroup(credentials.privateKeyPem, cluster, nodeIPs(), groupPort) : undefined;
  let appliedSeeds = "";
  // One shape for every nodeserver, whichever way it gets it (file or Secret).
  const peersState = (): PeersState => {
    const group = peersGroup();
    appliedSeeds = JSON.stringify(group?.seeds ?? []);
    return peersStateFrom(
      desired.domainPeers().map((p) => ({ domain: p.metadata.name, spec: p.spec })),
      namespaceFor(cluster),
      options.domainRelay ? { address: options.domainRelay, caPem: credentials.caCertPem } : undefined,
      statsToken,
      group,
    );
  };

  const groupPoller =
    groupPort && statsToken && options.nodeserverStatsPort
      ? new GroupPoller({
          hosts: () => [...nodeIPs()].sort(),
          port: options.nodeserverStatsPort,
          token: statsToken,
          intervalMs: options.statsIntervalMs ?? 5_000,
          clock,
          logger,
          // called only once started, after scheduleReport below is defined
          onChange: () => scheduleReport(),
        })
      : undefined;

  const nodeTopology = options.nodeTopology;
  const nodePingMesh =
    groupPort && statsToken && options.nodeserverStatsPort && nodeTopology && !options.pingMesh
      ? new NodePingMeshPoller({
          nodes: () =>
            runtime.observe().nodes.map((n) => ({
              name: n.name,
              labels: n.labels,
              host: n.addresses.find((a) => a.type === "InternalIP")?.address,
            })),
          topology: nodeTopology,
          port: options.nodeserverStatsPort,
          token: statsToken,
          intervalMs: options.statsIntervalMs ?? 5_000,
          clock,
          logger,
          onChange: () => scheduleReport(),
        })
      : undefined;
  const pingMeshSource = options.pingMesh ?? (nodePingMesh ? () => nodePingMesh.status() : undefined);

  // A failed apply is tried again on its own (1 s doubling to 30 s) with the desired set as it is
  // then: the failure may pass (a full disk freed, an apiserver back) with no change from the hub
  // to bring the next apply. One apply at a time: a retry and a message queue behind each other.
  let applying: Promise<void> = Promise.resolve();
  let retry: TimerId | undefined;
  let retries = 0;
  let stopped = false;
  const applyNow = () => {
    if (retry) clock.clearTimeout(retry);
    retry = undefined;
    const run = applying.then(applyDesired);
    applying = run.catch(() => undefined);
    return run;
  };

  const onDesired = async (message: Snapshot | Delta) => {
    if (message.type === "snapshot") desired.replace(message.objects);
    else desired.update(message.upserts, message.deletes);
    await applyNow();
  };

  const applyDesired = async () => {
    if (stopped) return;
    // Each part of the desired set is applied even when another fails: a Secret the agent may not
    // write (fleet/agent-sealed-secrets not installed) holds up no Task, node overlay or Addon.
    // The nodeservers' routes and the Secrets go beside the Tasks, not before them (a pod that
    // mounts a Secret waits for it by itself); node overlays and Addons follow the Tasks.
    const failures: string[] = [];
    // thunks, so that a step that throws before it returns a promise fails alone too
    const settle = async (...steps: (() => Promise<void> | undefined)[]) => {
      for (const result of await Promise.allSettled(steps.map((step) => Promise.resolve().then(step))))
        if (result.status === "rejected")
          failures.push(result.reason instanceof Error ? result.reason.message : String(result.reason));
    };
    await settle(
      () => runtime.apply(tasks()),
      // apart from the runtime's step: a peers file the disk refuses holds up nothing else
      () => {
        options.onPeersState?.(peersState());
        return undefined;
      },
      () => {
        runtime.network?.applyDomainTasks?.(
          domainTasksFrom(desired.domainPeers().map((p) => ({ domain: p.metadata.name, spec: p.spec }))),
        );
        return runtime.network?.applyPeersState(peersState());
      },
      () => runtime.cluster?.applySecrets(desired.secrets()),
    );
    await settle(() => runtime.cluster?.applyNodeOverlays(nodeOverlays()));
    await settle(
      () => runtime.cluster?.applyAddons(desired.addons()),
      () => runtime.cluster?.applyBundles?.(desired.bundles()),
    );
    if (failures.length === 0) {
      applyError = undefined;
      applied = true;
      retries = 0;
    } else {
      applyError = failures.join("; ");
      const retryInMs = Math.min(APPLY_RETRY_MAX_MS, APPLY_RETRY_FIRST_MS * 2 ** Math.min(retries++, 10));
      logger.error("applying the desired set failed", { error: applyError, retryInMs });
      if (!stopped && !retry)
        retry = clock.setTimeout(() => {
          applyNow().catch((error: unknown) =>
            logger.error("applying the desired set failed", { error: String(error) }),
          );
        }, retryInMs);
    }
    scheduleReport();
  };

  let tunnelHost: () => string | undefined = () => undefined;
  const hop = options.accessHop
    ? await startAccessHop({ binary: options.accessHop, identity: credentials, logger }).catch(
        async (error) => {
          await group?.stop();
          throw error;
        },
      )
    : undefined;
  const access: AccessOptions | undefined = hop
    ? { ...options.access, hop: { process: hop, hubHost: () => tunnelHost() } }
    : options.access;
  const tunnel = await startAgentTunnel({
    hub: options.hub,
    store: options.credentials,
    hello: {
      agentVersion: packageJson.version,
      bootId: randomUUID(),
      runtime: options.runtimeKind,
      capabilities: capabilities(),
    },
    onDesired,
    capabilities,
    streams: streamsFor({ ...options, ...(access ? { access } : {}) }),
    logger,
    clock,
  }).catch(async (error: unknown) => {
    await hop?.close();
    await group?.stop();
    throw error;
  });
  tunnelHost = () => tunnel.hubHost;
  if (hop) tunnel.on("renewed", (next: HopIdentity) => hop.setIdentity(next));

  const report = () => {
    const observed = runtime.observe();
    const peers = desired.domainPeers();
    const addresses = domainIPs(cluster, peers);
    tunnel.report({
      nodes: observed.nodes.map((n) => nodeObject(cluster, n, observed.pods)),
      pods: observed.pods.map((p) => podObject(cluster, p, addresses)),
      tasks: [
        ...tasks().map((t) => taskStatusObject(cluster, t, observed)),
        ...lingeringTasks(cluster, tasks(), observed),
      ],
      ...(stats ? { domainPeers: trafficObjects(cluster, peers, stats) } : {}),
      addons: addonStatusObjects(
        cluster,
        desired.addons(),
        observed,
        runtime.cluster !== undefined,
        options.runtimeKind,
      ),
      bundles: bundleStatusObjects(
        cluster,
        desired.bundles(),
        observed,
        runtime.cluster?.applyBundles !== undefined,
        options.runtimeKind,
      ),
      capabilities: capabilities(),
      ...(observed.kubernetesVersion ? { kubernetesVersion: observed.kubernetesVersion } : {}),
      ...(observed.storageClasses ? { storageClasses: observed.storageClasses } : {}),
      // a runtime without an API of its own (process) is this machine: reporting is its test
      lastTest: observed.lastTest ?? { testedAt: new Date(clock.now()).toISOString(), ok: true },
      ...(group ? { agentGroup: group.report() } : {}),
      ...(!group && groupPoller?.view() ? { agentGroup: groupPoller.view() } : {}),
      ...pingMeshField(pingMeshSource, stats?.clusterPairs() ?? [], clock.now()),
    });
  };
  // Changes come in bursts (a replica set starting): one report per burst is enough.
  let pending: TimerId | undefined;
  const scheduleReport = () => {
    if (pending) return;
    pending = clock.setTimeout(() => {
      pending = undefined;
      report();
    }, 100);
  };
  // A node that came or went changes the group's seeds: the nodeservers get them with the state.
  const reseed = () => {
    if (!groupPort || !applied || JSON.stringify(peersGroup()?.seeds ?? []) === appliedSeeds) return;
    Promise.resolve()
      .then(() => runtime.network?.applyPeersState(peersState()))
      .catch((error: unknown) =>
        logger.error("handing the group's seeds over failed", { error: String(error) }),
      );
  };
  const unsubscribe = runtime.onChange(() => {
    reseed();
    scheduleReport();
  });
  const stats =
    options.nodeserverSockets?.length || statsToken
      ? new StatsPoller({
          sockets: options.nodeserverSockets ?? [],
          ...(options.nodeserverStatsPort && statsToken
            ? {
                http: {
                  port: options.nodeserverStatsPort,
                  token: statsToken,
                  hosts: () =>
                    runtime
                      .observe()
                      .nodes.flatMap((n) =>
                        n.addresses.filter((a) => a.type === "InternalIP").map((a) => a.address),
                      ),
                },
              }
            : {}),
          intervalMs: options.statsIntervalMs ?? 5_000,
          clock,
          logger,
          onChange: scheduleReport,
        })
      : undefined;
  stats?.start();
  groupPoller?.start();
  nodePingMesh?.start();
  tunnel.on("connected", () => {
    logger.info("connected to the hub", { hub: options.hub, cluster });
    scheduleReport();
  });
  tunnel.on("disconnected", (error) => logger.warn("tunnel lost; reconnecting", { error: error?.message }));
  const stopReporting = every(clock, options.reportIntervalMs ?? 10_000, report);

  return {
    cluster,
    tunnel,
    accessHop: hop,
    desired: () => desired.all(),
    async stop() {
      stopped = true;
      if (retry) clock.clearTimeout(retry);
      stopReporting();
      stats?.stop();
      groupPoller?.stop();
      nodePingMesh?.stop();
      if (pending) clock.clearTimeout(pending);
      unsubscribe();
      await group?.stop();
      await tunnel.stop();
      await hop?.close();
      await runtime.stop();
    },
  };
}
