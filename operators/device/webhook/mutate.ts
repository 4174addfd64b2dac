// The webhook's one decision: a pod that asks for rlinf.io/device in any container gets the devinit
// init container first, as a JSON Patch. Pure: the same pod always gets the same patch, and a pod
// that already has devinit (a reinvocation, or a pod re-submitted from its own output) gets none.
import { DEVICE_RESOURCE } from "../paths.ts";

export const DEVINIT = "devinit";
/** The pod annotation naming the address devinit gives the macvlan interface (CIDR). */
export const ADDRESS_ANNOTATION = "rlinf.io/device-address";

export interface DevinitSettings {
  /** The image with `rlark` in it (the same image as every component). */
  image: string;
  /** Interface in the pod the macvlan hangs off (default eth0). */
  master: string;
  /** macvlan mode: bridge, private, vepa, passthru. */
  mode: string;
}

interface Container {
  name?: string;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}
interface Pod {
  metadata?: { annotations?: Record<string, string> };
  spec?: { containers?: Container[]; initContainers?: Container[] };
}

export type PatchOperation = { op: "add"; path: string; value: unknown };

function wants(container: Container): unknown {
  return container.resources?.limits?.[DEVICE_RESOURCE] ?? container.resources?.requests?.[DEVICE_RESOURCE];
}

/** Whether any container of the pod requests the device resource. */
export function requestsDevice(pod: Pod): boolean {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some(
    (c) => wants(c) !== undefined,
  );
}

/** The patch for `pod`, or an empty list when it needs none. */
export function devinitPatch(pod: Pod, settings: DevinitSettings): PatchOperation[] {
  if (!requestsDevice(pod)) return [];
  const inits = pod.spec?.initContainers;
  if (inits?.some((c) => c.name === DEVINIT)) return [];
  const env = [
    { name: "RLARK_MACVLAN_MASTER", value: settings.master },
    { name: "RLARK_MACVLAN_MODE", value: settings.mode },
  ];
  const address = pod.metadata?.annotations?.[ADDRESS_ANNOTATION];
  if (address) env.push({ name: "RLARK_MACVLAN_ADDRESS", value: address });
  const container = {
    name: DEVINIT,
    image: settings.image,
    // the image's entrypoint is node with rlark.js; it has no /usr/bin/env for rlark's shebang
    args: ["devinit"],
    env,
    // An init container's device request does not add to the pod's (the pod takes the larger of
    // its init and app requests), and kubelet hands the same devices on to the app containers.
    resources: { requests: { [DEVICE_RESOURCE]: "1" }, limits: { [DEVICE_RESOURCE]: "1" } },
    securityContext: {
      runAsUser: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] },
    },
  };
  // devinit runs first: the pod's network is ready before any other init container starts.
  return inits
    ? [{ op: "add", path: "/spec/initContainers/0", value: container }]
    : [{ op: "add", path: "/spec/initContainers", value: [container] }];
}
