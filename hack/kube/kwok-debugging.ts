// kwok plays each node's kubelet, including the kubelet's debugging API that the kube-apiserver
// proxies exec, attach, logs and port-forward to. kwok answers those per pod from its Exec, Logs
// and PortForward objects (or the cluster-wide ClusterExec, ClusterLogs, ClusterPortForward), which
// run a local command, read a local CRI-format log file, or forward to a local address. With
// `--enable-crds` kwok watches them as custom resources, so a test creates them next to its pods.
// Their schemas here accept any fields: kwok decodes and checks them itself.

/** The kinds kwok is told to watch as CRDs (`--enable-crds`). */
export const KWOK_DEBUGGING_KINDS = [
  "Exec",
  "ClusterExec",
  "Logs",
  "ClusterLogs",
  "PortForward",
  "ClusterPortForward",
] as const;

function plural(kind: string): string {
  return kind.toLowerCase().endsWith("s") ? kind.toLowerCase() : `${kind.toLowerCase()}s`;
}

/** The CustomResourceDefinitions kwok's informers list; they must exist before kwok starts. */
export function kwokDebuggingCrds(): object[] {
  return KWOK_DEBUGGING_KINDS.map((kind) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural(kind)}.kwok.x-k8s.io` },
    spec: {
      group: "kwok.x-k8s.io",
      scope: kind.startsWith("Cluster") ? "Cluster" : "Namespaced",
      names: { kind, listKind: `${kind}List`, plural: plural(kind), singular: kind.toLowerCase() },
      versions: [
        {
          name: "v1alpha1",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
        },
      ],
    },
  }));
}
