// The embodied runtime (seed 001 §4.6): the device plugin that advertises cameras and robots as
// rlinf.io/device, the admission webhook that gives their pods the devinit container, and the
// paths both share with the controllers and their CLIs.

export { devinit, devinitConfig } from "./devinit.ts";
export * from "./paths.ts";
export { DevicePlugin, type DevicePluginOptions } from "./plugin/device-plugin.ts";
export { keepCaBundle, syncCaBundle } from "./webhook/ca-bundle.ts";
export { type DevinitSettings, devinitPatch, requestsDevice } from "./webhook/mutate.ts";
export { type DeviceWebhook, startDeviceWebhook } from "./webhook/webhook-server.ts";
