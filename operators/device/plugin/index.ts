// The kubelet device plugin: discovery of cameras and configured robots, ListAndWatch, Allocate.
export { DevicePlugin, type DevicePluginOptions } from "./device-plugin.ts";
