// One controller on a real store under the real Manager, as the hub runs it: stopped once, by the
// test (a hub shutting down) or at its teardown, the store closed after the manager.
import { type Controller, Manager } from "../../operators/lib/controller/index.ts";
import type { Store } from "../../operators/lib/store/index.ts";

export interface RunningController {
  manager: Manager;
  stop(): Promise<void>;
}

export async function runController(
  t: { teardown(fn: () => unknown): void },
  store: Store,
  controller: Controller,
): Promise<RunningController> {
  const manager = new Manager({ store, resyncPeriod: 0 });
  manager.add(controller);
  await manager.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await manager.stop();
    await store.close();
  };
  t.teardown(stop);
  return { manager, stop };
}
