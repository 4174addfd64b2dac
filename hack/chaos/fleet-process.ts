// kill -9 of one process of a hack/kube fleet (an API server, etcd) and its restart with the same
// command line, as a supervisor (systemd, the kubelet) would restart it. The new PID goes into
// the fleet's state.json so `hack/kube/down` stops it like the one it replaced.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

interface ProcRecord {
  name: string;
  pid: number;
  start: string;
  log: string;
}

interface FleetState {
  processes: ProcRecord[];
}

function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** The names of the fleet's processes (`etcd`, `fleet-1-kube-apiserver`, ...). */
export function fleetProcessNames(fleetDir: string): string[] {
  const state = JSON.parse(readFileSync(join(fleetDir, "state.json"), "utf8")) as FleetState;
  return state.processes.map((p) => p.name);
}

/**
 * Kills the fleet process `name` with SIGKILL and starts it again with the command line,
 * working dir and environment it had, once `downFor` has passed (resolves when restarted).
 * `changeArgs` may change the command line first (a test that puts a proxy in a path).
 */
export async function killAndRestart(
  fleetDir: string,
  name: string,
  downForMs: number,
  changeArgs: (args: string[]) => string[] = (args) => args,
): Promise<void> {
  const statePath = join(fleetDir, "state.json");
  const state = JSON.parse(readFileSync(statePath, "utf8")) as FleetState;
  const record = state.processes.find((p) => p.name === name);
  if (!record) throw new Error(`the fleet in ${fleetDir} has no process ${name}`);
  if (startTime(record.pid) !== record.start) throw new Error(`${name} (pid ${record.pid}) is not running`);
  const [program, ...args] = readFileSync(`/proc/${record.pid}/cmdline`, "utf8").split("\0").slice(0, -1);
  const argv = [program as string, ...changeArgs(args)];
  const dir = readlinkSync(`/proc/${record.pid}/cwd`);
  const env = Object.fromEntries(
    readFileSync(`/proc/${record.pid}/environ`, "utf8")
      .split("\0")
      .filter((e) => e.includes("="))
      .map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
  );
  process.kill(record.pid, "SIGKILL");
  while (startTime(record.pid) === record.start) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, downForMs));
  const fd = openSync(record.log, "a");
  const child = spawn(argv[0]!, argv.slice(1), { cwd: dir, env, detached: true, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not restart ${name}`);
  // Re-read: another restart may have written the file meanwhile.
  const now = JSON.parse(readFileSync(statePath, "utf8")) as FleetState;
  const entry = now.processes.find((p) => p.name === name)!;
  entry.pid = child.pid;
  entry.start = startTime(child.pid) ?? "";
  writeFileSync(statePath, `${JSON.stringify(now, null, 2)}\n`);
}
