// `rlark devinit` as the init container runs it: a real process inside a network namespace with a
// pod-like eth0 (a veth end), creating the macvlan through the real `ip` binary.
import { execFileSync } from "node:child_process";
import t from "tap";
import { rlark } from "../helpers/rlark-cli.ts";

const ns = `rlkdev${process.pid}`;
const ip = (...args: string[]) => execFileSync("ip", args, { encoding: "utf8" });

t.before(() => {
  ip("netns", "add", ns);
  ip("link", "add", `rlkdh${process.pid}`, "type", "veth", "peer", "name", "eth0", "netns", ns);
});
t.teardown(() => {
  execFileSync("ip", ["netns", "del", ns], { stdio: "ignore" });
});

const outsidePod = (env: Record<string, string>) => rlark(["devinit"], { env });

t.test("adds the macvlan on eth0 with the pod's device address; a second run changes nothing", async (t) => {
  const main = new URL("../../operators/cli/main.ts", import.meta.url).pathname;
  // execFileSync throws on a non-zero exit: each run succeeding is the assertion
  const run = () =>
    execFileSync("ip", ["netns", "exec", ns, process.execPath, main, "devinit"], {
      env: { ...process.env, RLARK_MACVLAN_ADDRESS: "192.168.77.5/24" },
    });
  run();
  run();
  const link = ip("-n", ns, "-d", "-o", "link", "show", "dev", "dev0");
  t.match(link, /dev0@eth0/);
  t.match(link, /macvlan mode bridge/);
  t.match(link, /state (UP|LOWERLAYERDOWN|UNKNOWN)|,UP/);
  t.match(ip("-n", ns, "-o", "addr", "show", "dev", "dev0"), /inet 192\.168\.77\.5\/24/);
});

t.test("a bad variable or a missing master fails naming it", async (t) => {
  const bad = await outsidePod({ RLARK_MACVLAN_MODE: "weird" });
  t.equal(bad.code, 1);
  t.match(bad.stderr, 'rlark devinit: RLARK_MACVLAN_MODE: "weird" is not one of bridge');
  const address = await outsidePod({ RLARK_MACVLAN_ADDRESS: "192.168.77.5" });
  t.match(address.stderr, 'RLARK_MACVLAN_ADDRESS: "192.168.77.5" is not an address with a prefix length');
  // Outside the namespace there is no interface by this name: the ip command's refusal is shown.
  const missing = await outsidePod({ RLARK_MACVLAN_MASTER: "rlknomaster0", RLARK_MACVLAN_NAME: "rlknodev0" });
  t.equal(missing.code, 1);
  t.match(
    missing.stderr,
    /rlark devinit: ip link add link rlknomaster0 name rlknodev0 type macvlan mode bridge: /,
  );
});
