// What an Addon has installed in the cluster, kept in a ConfigMap of the agent's namespace: the
// objects (kind, name) the agent applied for it, their digest, the version and the generation.
// Pruning and uninstalling work from it, so they need no discovery of every kind, and a new
// agent on the cluster picks up where the last one left off: the runtime keeps no state of its own.
import {
  type CoreV1Api,
  type KubernetesObjectApi,
  PatchStrategy,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import { ADDON_FIELD_MANAGER, AGENT_INSTANCE_LABEL } from "../../../../api/index.ts";

/** On each inventory ConfigMap: the Addon's (release's) name. */
export const INVENTORY_LABEL = "rlark.io/addon-inventory";
const KEY = "inventory.json";

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export interface Inventory {
  /** The release's name (the Addon's). */
  name: string;
  /** Every object that may exist for the Addon: during an apply, the old ones and the new ones. */
  objects: ObjectRef[];
  /** SHA-256 of the applied objects; "" while an apply is under way. */
  digest: string;
  version: string;
  /** metadata.generation of the release last applied in full. */
  generation: number;
  /** Set while the objects of a change roll out: Installing the first time, Upgrading after. */
  rolling?: "Installing" | "Upgrading";
  /** A Bundle's: whether its objects are deleted when they leave it (and when it goes). */
  prune?: boolean;
}

export interface InventoryStore {
  list(): Promise<Inventory[]>;
  write(inventory: Inventory): Promise<void>;
  remove(name: string): Promise<void>;
}

/** Whose inventories: an Addon's (the default) or a Bundle's (bundles/bundle-applier.ts). */
export interface InventoryFlavour {
  /** ConfigMap name prefix, before the instance and the name. */
  prefix: string;
  /** The label every inventory of this flavour carries, valued with the name. */
  label: string;
  fieldManager: string;
}

const ADDON_INVENTORIES: InventoryFlavour = {
  prefix: "rlark-addon-",
  label: INVENTORY_LABEL,
  fieldManager: ADDON_FIELD_MANAGER,
};

export function inventoryStore(options: {
  core: CoreV1Api;
  objects: KubernetesObjectApi;
  namespace: string;
  instance?: string | undefined;
  flavour?: InventoryFlavour;
}): InventoryStore {
  const { core, objects, namespace, instance } = options;
  const flavour = options.flavour ?? ADDON_INVENTORIES;
  const configMapName = (name: string) => `${flavour.prefix}${instance ? `${instance}-` : ""}${name}`;
  const selector = `${flavour.label},${instance ? `${AGENT_INSTANCE_LABEL}=${instance}` : `!${AGENT_INSTANCE_LABEL}`}`;
  return {
    async list() {
      const { items } = await core.listNamespacedConfigMap({ namespace, labelSelector: selector });
      return items.flatMap((cm) => {
        const parsed = parseInventory(cm);
        return parsed ? [parsed] : [];
      });
    },
    async write(inventory) {
      const body: V1ConfigMap & { apiVersion: string; kind: string } = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: configMapName(inventory.name),
          namespace,
          labels: {
            [flavour.label]: inventory.name,
            ...(instance ? { [AGENT_INSTANCE_LABEL]: instance } : {}),
          },
        },
        data: { [KEY]: JSON.stringify(inventory) },
      };
      await objects.patch(
        body,
        undefined,
        undefined,
        flavour.fieldManager,
        true,
        PatchStrategy.ServerSideApply,
      );
    },
    async remove(name) {
      try {
        await core.deleteNamespacedConfigMap({ name: configMapName(name), namespace });
      } catch (err) {
        if ((err as { code?: number }).code !== 404) throw err;
      }
    },
  };
}

/** An inventory someone edited into nonsense is ignored (its objects then stay: logged by the caller). */
function parseInventory(cm: V1ConfigMap): Inventory | undefined {
  try {
    const value = JSON.parse(cm.data?.[KEY] ?? "") as Inventory;
    if (typeof value.name !== "string" || !Array.isArray(value.objects)) return undefined;
    return value;
  } catch {
    return undefined;
  }
}
