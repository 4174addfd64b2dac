// The device controllers (camera, ROS) and what their CLIs need to reach them.

export { startCameraController } from "./camera/camera-controller.ts";
export { type CameraControllerConfig, readCameraConfig } from "./camera/config.ts";
export { ConfigError } from "./config-file.ts";
export { grpc, type ServiceName, serviceClient, unaryCall } from "./grpc.ts";
export type { LogLine } from "./log-ring.ts";
export { type Flavor, type RosControllerConfig, readRosConfig } from "./ros/config.ts";
export { type RunningController, rosCapabilityName, startRosController } from "./ros/ros-controller.ts";
