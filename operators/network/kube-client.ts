// The Kubernetes client classes the Secret source uses (peers-from-secret.ts), loaded lazily so the
// sidecar and the file source never load the client, and named statically so the image's bundler
// (hack/images/bundle-deps.ts) keeps only what they need: a dynamic import of the package itself
// made it bundle the whole client.
export { CoreV1Api, Watch } from "@kubernetes/client-node";
