// The hub process, as the CLI starts it: startHub, and what `rlark up` and `rlark token` use of it.
export type { Enrollment } from "./enrollment.ts";
export type { ClusterTestAnswer, ClusterTester } from "./http/cluster-test-route.ts";
export { type Hub, type HubOptions, type HubSource, startHub } from "./hub.ts";
export { ensurePlayground, type Playground } from "./playground.ts";
export { loadKubeConfig, openStoreOfDataDir, type StoreSettings } from "./store-wiring.ts";
export { type HubPki, openHubPki } from "./tunnel-server.ts";
