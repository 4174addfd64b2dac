// One way to load a kubeconfig for every in-cluster component (agent, device webhook). A static
// named import keeps @kubernetes/client-node's image bundle to the names used (hack/images/bundle-deps.ts).
import { KubeConfig } from "@kubernetes/client-node";

/** The cluster to serve: a kubeconfig file, or the pod's in-cluster credentials when none is given. */
export function loadKubeConfig(file?: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (file) kubeConfig.loadFromFile(file);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}
