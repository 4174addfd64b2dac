import type { Controller } from "../lib/controller/index.ts";

export interface ControllerDependencies {
  dataDir: string;
}

/** Every controller a hub runs, in the order they are started. */
export function hubControllers(_deps: ControllerDependencies): Controller[] {
  return [];
}
