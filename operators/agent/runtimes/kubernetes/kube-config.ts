import { KubeConfig } from "@kubernetes/client-node";

/** The cluster to serve: a kubeconfig file, or the pod's in-cluster credentials when none is given. */
export function loadKubeConfig(file?: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (file) kubeConfig.loadFromFile(file);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}
