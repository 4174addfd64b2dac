// Where a sealed value may be opened (contract S); sealing and opening must build the same string.

export const secretValueContext = (namespace: string, name: string, key: string): string =>
  `secret/${namespace}/${name}/${key}`;

export const clusterKubeconfigContext = (cluster: string): string => `cluster/${cluster}/kubeconfig`;
