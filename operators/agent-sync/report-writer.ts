// Writes an agent's report into the store: Nodes and Pods of its cluster mirrored, Task and
// AddonRelease status set, and objects the agent no longer reports removed. Every object is checked against its
// schema first: a report crosses a process boundary.
import { checkSchema, MANAGED_BY_GIT, MANAGED_BY_LABEL, namespaceFor } from "../api/index.ts";
import type { Logger } from "../lib/logger.ts";
import { deepEqual, type KubeObject, type Store } from "../lib/store/index.ts";
import type { Report } from "../lib/tunnel/index.ts";
import { overlayKeys, pickKeys, SOURCE_ANNOTATIONS } from "../source/index.ts";

export async function writeReport(
  store: Store,
  cluster: string,
  report: Report,
  logger: Logger,
): Promise<void> {
  const namespace = namespaceFor(cluster);
  const valid = (object: KubeObject, kind: string): boolean => {
    if (object.kind !== kind || object.metadata.namespace !== namespace) {
      logger.warn("report object outside the agent's cluster ignored", { cluster, kind: object.kind });
      return false;
    }
    const violations = checkSchema(object);
    if (violations.length > 0) {
      logger.warn("invalid object in agent report ignored", {
        cluster,
        kind,
        name: object.metadata.name,
        problem: `${violations[0]?.path}: ${violations[0]?.message}`,
      });
      return false;
    }
    return true;
  };
  const nodes = report.nodes.filter((n) => valid(n, "Node"));
  const pods = report.pods.filter((p) => valid(p, "Pod"));
  await mirror(store, "Node", namespace, nodes, mergeObservedNode);
  await mirror(store, "Pod", namespace, pods, (_current, reported) => reported);
  for (const reported of report.domainPeers ?? []) await writeTraffic(store, namespace, reported, logger);
  for (const reported of report.tasks) {
    if (reported.kind !== "Task" || reported.metadata.namespace !== namespace) continue;
    const task = await store.get("Task", namespace, reported.metadata.name);
    if (!task || task.metadata.deletionTimestamp || deepEqual(task.status ?? null, reported.status ?? null))
      continue;
    const candidate = { ...task, status: reported.status };
    if (checkSchema(candidate).length > 0) {
      logger.warn("invalid task status in agent report ignored", { cluster, task: task.metadata.name });
      continue;
    }
    await store.updateStatus(candidate).catch((error: unknown) => {
      // A concurrent write wins; the next report carries the status again.
      logger.warn("task status not written", { task: task.metadata.name, error: String(error) });
    });
  }
  // Releases being uninstalled are deleted already but still take their status (Uninstalling).
  for (const reported of report.addons ?? []) {
    if (reported.kind !== "AddonRelease" || reported.metadata.namespace !== namespace) continue;
    const release = await store.get("AddonRelease", namespace, reported.metadata.name);
    if (!release || deepEqual(release.status ?? null, reported.status ?? null)) continue;
    const candidate = { ...release, status: reported.status };
    if (checkSchema(candidate).length > 0) {
      logger.warn("invalid addon status in agent report ignored", { cluster, addon: release.metadata.name });
      continue;
    }
    await store.updateStatus(candidate).catch((error: unknown) => {
      logger.warn("addon status not written", { addon: release.metadata.name, error: String(error) });
    });
  }
  for (const reported of report.bundles ?? []) {
    if (reported.kind !== "BundleRelease" || reported.metadata.namespace !== namespace) continue;
    const release = await store.get("BundleRelease", namespace, reported.metadata.name);
    if (!release || deepEqual(release.status ?? null, reported.status ?? null)) continue;
    const candidate = { ...release, status: reported.status };
    if (checkSchema(candidate).length > 0) {
      logger.warn("invalid bundle status in agent report ignored", {
        cluster,
        bundle: release.metadata.name,
      });
      continue;
    }
    await store.updateStatus(candidate).catch((error: unknown) => {
      logger.warn("bundle status not written", { bundle: release.metadata.name, error: String(error) });
    });
  }
}

/** A DomainPeer's status.traffic as the agent reports it; the rest of its status stays. */
async function writeTraffic(
  store: Store,
  namespace: string,
  reported: KubeObject,
  logger: Logger,
): Promise<void> {
  if (reported.kind !== "DomainPeer" || reported.metadata.namespace !== namespace) return;
  const peer = await store.get("DomainPeer", namespace, reported.metadata.name);
  const traffic = (reported.status as { traffic?: unknown } | undefined)?.traffic;
  const current = (peer?.status ?? {}) as Record<string, unknown>;
  if (!peer || peer.metadata.deletionTimestamp || deepEqual(current.traffic ?? null, traffic ?? null)) return;
  const { traffic: _old, ...rest } = current;
  const candidate = { ...peer, status: { ...rest, ...(traffic === undefined ? {} : { traffic }) } };
  const [problem] = checkSchema(candidate);
  if (problem) {
    logger.warn("invalid Domain traffic in agent report ignored", {
      domainPeer: `${namespace}/${peer.metadata.name}`,
      problem: `${problem.path}: ${problem.message}`,
    });
    return;
  }
  await store.updateStatus(candidate).catch((error: unknown) => {
    // a concurrent write (the Domain controller's) wins; the next report carries the figures again
    logger.warn("Domain traffic not written", { domainPeer: peer.metadata.name, error: String(error) });
  });
}

/**
 * Makes the store's objects of `kind` in `namespace` the reported ones. Objects git declared
 * (Node overlays) are never deleted here, only their status cleared of what nobody reports.
 */
async function mirror(
  store: Store,
  kind: string,
  namespace: string,
  reported: KubeObject[],
  merge: (current: KubeObject, reported: KubeObject) => KubeObject,
): Promise<void> {
  const existing = new Map((await store.list(kind, { namespace })).items.map((o) => [o.metadata.name, o]));
  for (const object of reported) {
    const current = existing.get(object.metadata.name);
    existing.delete(object.metadata.name);
    if (!current) {
      await store.create({ ...object, metadata: stripServerFields(object.metadata) });
      continue;
    }
    const next = merge(current, object);
    const metadataChanged =
      !deepEqual(current.metadata.labels ?? {}, next.metadata.labels ?? {}) ||
      !deepEqual(current.metadata.annotations ?? {}, next.metadata.annotations ?? {}) ||
      !deepEqual(current.spec ?? null, next.spec ?? null);
    let stored = current;
    if (metadataChanged) {
      stored = await store.update({
        ...current,
        metadata: {
          ...current.metadata,
          labels: next.metadata.labels,
          annotations: next.metadata.annotations,
        },
        spec: next.spec,
      });
    }
    if (!deepEqual(stored.status ?? null, object.status ?? null)) {
      await store.updateStatus({ ...stored, status: object.status });
    }
  }
  for (const gone of existing.values()) {
    if (gone.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_GIT) continue;
    await store.delete(kind, namespace, gone.metadata.name).catch(() => {});
  }
}

function stripServerFields(metadata: KubeObject["metadata"]): KubeObject["metadata"] {
  const { uid: _uid, resourceVersion: _rv, generation: _g, creationTimestamp: _c, ...rest } = metadata;
  return rest;
}

/**
 * The agent sees the real node (which already carries the overlay it applied); git's overlay
 * keys and the cordon stay as git says until the agent has caught up.
 */
function mergeObservedNode(current: KubeObject, reported: KubeObject): KubeObject {
  if (current.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_GIT) return reported;
  const keys = overlayKeys(current);
  const gitAnnotations = Object.fromEntries(
    Object.entries(current.metadata.annotations ?? {}).filter(([k]) => SOURCE_ANNOTATIONS.has(k)),
  );
  return {
    ...reported,
    metadata: {
      ...reported.metadata,
      labels: {
        ...reported.metadata.labels,
        ...pickKeys(current.metadata.labels, [...keys.labels, MANAGED_BY_LABEL]),
      },
      annotations: {
        ...reported.metadata.annotations,
        ...pickKeys(current.metadata.annotations, keys.annotations),
        ...gitAnnotations,
      },
    },
    spec: current.spec,
  };
}
