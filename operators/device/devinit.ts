// `rlark devinit`, the init container the webhook injects: gives the pod a macvlan interface on top
// of its own interface (RLARK_MACVLAN_MASTER, default eth0), so the task reaches devices on the
// robot's L2 network with an address of its own (RLARK_MACVLAN_ADDRESS, from the pod annotation
// rlinf.io/device-address). Runs in the pod's network namespace with NET_ADMIN and nothing else,
// through the `ip` binary (iproute2): Node has no netlink. Idempotent: a restarted init container
// finds the interface and only makes sure of its address and state.
import { execFile } from "node:child_process";
import { isIP } from "node:net";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface DevinitConfig {
  master: string;
  name: string;
  mode: string;
  address?: string;
}

const MODES = ["bridge", "private", "vepa", "passthru", "source"];
const IFNAME = /^[A-Za-z0-9_.-]{1,15}$/;

/** The config from env; throws naming the variable that is wrong. */
export function devinitConfig(env: NodeJS.ProcessEnv): DevinitConfig {
  const master = env.RLARK_MACVLAN_MASTER || "eth0";
  const name = env.RLARK_MACVLAN_NAME || "dev0";
  const mode = env.RLARK_MACVLAN_MODE || "bridge";
  const address = env.RLARK_MACVLAN_ADDRESS || undefined;
  for (const [variable, value] of [
    ["RLARK_MACVLAN_MASTER", master],
    ["RLARK_MACVLAN_NAME", name],
  ] as const)
    if (!IFNAME.test(value)) throw new Error(`${variable}: "${value}" is not an interface name`);
  if (!MODES.includes(mode))
    throw new Error(`RLARK_MACVLAN_MODE: "${mode}" is not one of ${MODES.join(", ")}`);
  if (address !== undefined) {
    const [ip, prefix, extra] = address.split("/");
    const family = isIP(ip ?? "");
    const bits = Number(prefix);
    if (
      extra !== undefined ||
      family === 0 ||
      !Number.isInteger(bits) ||
      bits < 0 ||
      bits > (family === 4 ? 32 : 128)
    )
      throw new Error(
        `RLARK_MACVLAN_ADDRESS: "${address}" is not an address with a prefix length (192.168.10.5/24)`,
      );
  }
  return { master, name, mode, ...(address ? { address } : {}) };
}

async function ip(args: string[]): Promise<string> {
  try {
    return (await run("ip", args)).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`ip ${args.join(" ")}: ${stderr || (error as Error).message}`);
  }
}

export async function devinit(config: DevinitConfig): Promise<void> {
  const exists = await ip(["-o", "link", "show", "dev", config.name]).then(
    () => true,
    () => false,
  );
  if (!exists)
    await ip([
      "link",
      "add",
      "link",
      config.master,
      "name",
      config.name,
      "type",
      "macvlan",
      "mode",
      config.mode,
    ]);
  if (config.address) await ip(["addr", "replace", config.address, "dev", config.name]);
  await ip(["link", "set", "dev", config.name, "up"]);
}
