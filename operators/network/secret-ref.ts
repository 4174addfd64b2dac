// `--peers-secret <namespace>/<name>`, parsed apart from peers-from-secret.ts so that parsing the
// flag does not load the Kubernetes client (the sidecar and the file source never need it).

/** `<namespace>/<name>` → its parts; a clear error otherwise. */
export function parseSecretRef(ref: string): { namespace: string; name: string } {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(ref);
  if (!match) throw new Error(`--peers-secret must be <namespace>/<name> (got "${ref}")`);
  return { namespace: match[1] as string, name: match[3] as string };
}
