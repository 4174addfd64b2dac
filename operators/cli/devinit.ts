import type { Command } from "commander";

export const DEVINIT_HELP = `
The init container the device webhook injects into pods that request rlinf.io/device (not meant
to be run by hand). In the pod's network namespace, with NET_ADMIN, it runs
  ip link add link $RLARK_MACVLAN_MASTER name $RLARK_MACVLAN_NAME type macvlan mode $RLARK_MACVLAN_MODE
then, when RLARK_MACVLAN_ADDRESS is set (from the pod annotation rlinf.io/device-address),
  ip addr replace $RLARK_MACVLAN_ADDRESS dev $RLARK_MACVLAN_NAME
and sets the interface up. Defaults: master eth0, name dev0, mode bridge. Running it again changes
nothing. Exits 1 naming the variable or the ip command that failed.
`;

export function registerDevinit(program: Command): void {
  program
    .command("devinit")
    .description("add the device network's macvlan interface in this pod (the webhook's init container)")
    .addHelpText("after", DEVINIT_HELP)
    .action(async () => {
      const { devinit, devinitConfig } = await import("../device/index.ts");
      await devinit(devinitConfig(process.env));
    });
}
