// The mutating admission webhook that gives pods requesting rlinf.io/device the devinit container.
export { keepCaBundle, syncCaBundle } from "./ca-bundle.ts";
export { type DevinitSettings, devinitPatch, requestsDevice } from "./mutate.ts";
export { type DeviceWebhook, startDeviceWebhook } from "./webhook-server.ts";
