// Bounded polling for tests: a condition checked a fixed number of times, never a timed
// assertion. The interval only spaces the checks; the bound is what fails a broken feature.

export interface WaitOptions {
  /** Checks before giving up. Default 1000. */
  attempts?: number;
  /** Milliseconds between checks. Default 5. */
  everyMs?: number;
}

/** Resolves with the first defined (and not false) value `check` returns; throws after the bound. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 1000;
  const every = options.everyMs ?? 5;
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, every));
  }
  throw new Error(`never happened: ${what}${last instanceof Error ? ` (last error: ${last.message})` : ""}`);
}

// Bounds for checks on things slower than the test's own process. Generous: the suite shares two
// cores with real git, hubs, agents and control planes.

/** A real hub, git repository or browser: 600 checks 50 ms apart. */
export const onRealServers: WaitOptions = { attempts: 600, everyMs: 50 };

/** Processes a runtime starts and stops: 600 checks 25 ms apart. */
export const onProcesses: WaitOptions = { attempts: 600, everyMs: 25 };

/** A Kubernetes control plane of the shared fleet: 240 checks 250 ms apart. */
export const onKube: WaitOptions = { attempts: 240, everyMs: 250 };
