// The embodied runtime (seed 001 §4.6): the device plugin that advertises cameras and robots as
// rlinf.io/device, the admission webhook that gives their pods the devinit container, and the
// paths both share with the controllers and their CLIs.

export { devinit, devinitConfig } from "./devinit.ts";
export { type NodeCapabilityOptions, publishNodeCapabilities } from "./node-capabilities.ts";
export * from "./paths.ts";
export * from "./plugin/index.ts";
export * from "./webhook/index.ts";
