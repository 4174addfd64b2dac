// The Kubernetes client classes the Secret source uses (peers-from-secret.ts), loaded lazily so the
// sidecar and the file source never load the client, and named here so that the image's bundler
// (hack/images/bundle-deps.ts, which reads these files with regular expressions: keep this
// comment free of that keyword) keeps only what they need; loading the package itself lazily made
// it bundle the whole client.
export { CoreV1Api, Watch } from "@kubernetes/client-node";
