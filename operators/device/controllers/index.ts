// The device controllers (camera, ROS) and what their CLIs need to reach them.

export { startCameraController } from "./camera/camera-controller.ts";
export { readCameraConfig } from "./camera/config.ts";
export { grpc, type RunningController, type ServiceName, serviceClient, unaryCall } from "./grpc.ts";
export type { LogLine } from "./log-ring.ts";
export { type Flavor, readRosConfig } from "./ros/config.ts";
export { startRosController } from "./ros/ros-controller.ts";
