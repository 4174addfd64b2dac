export { type BundleControllerOptions, createBundleController } from "./controller.ts";
