// Read-modify-write with retry on Conflict: the usual way a controller changes one object
// without losing a concurrent writer's change.

import { isConflict } from "./errors.ts";
import type { KubeObject, Store } from "./types.ts";

export interface ModifyOptions {
  /** Write with updateStatus (the change applies to status) instead of update. */
  status?: boolean;
  /** Attempts before the last Conflict is thrown. Default 5. */
  attempts?: number;
}

/**
 * Reads the object, lets `change` edit it (in place, or by returning a new one), and writes it
 * with its resourceVersion; on Conflict reads again and repeats. Returns the stored object, or
 * undefined when there is none (change is not called). `change` may run several times.
 */
export async function modify<T extends KubeObject = KubeObject>(
  store: Store,
  kind: string,
  namespace: string | undefined,
  name: string,
  // biome-ignore lint/suspicious/noConfusingVoidType: an in-place edit returns nothing.
  change: (object: T) => T | undefined | void,
  options: ModifyOptions = {},
): Promise<T | undefined> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const current = await store.get<T>(kind, namespace, name);
    if (!current) return undefined;
    const next = change(current) ?? current;
    try {
      return options.status ? await store.updateStatus(next) : await store.update(next);
    } catch (error) {
      if (!isConflict(error) || attempt >= attempts) throw error;
    }
  }
}
