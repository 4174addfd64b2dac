// Issue 31, item 10: idle sockets that never log in, from a handful of addresses, cannot lock
// everyone else out of the hub's SSH endpoint. Ten addresses keep ten idle connections each open
// (each one closed is opened again); each address holds only its own few places, and a real
// OpenSSH login from elsewhere still gets in. The hub with its default limits.
import { connect, type Socket } from "node:net";
import t from "tap";
import { run, startBastion, userYaml } from "../access/bastion-fixture.ts";
import { waitFor } from "../helpers/wait-for.ts";

const ADDRESSES = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 2}`);
const PER_ADDRESS = 10;

interface Idle {
  socket: Socket;
  greeted: boolean;
  closed: boolean;
}

t.test("idle pre-login sockets from ten addresses lock no login out", async (t) => {
  const b = await startBastion(t, {
    users: ["alice"],
    files: (keys) => ({ "users.yaml": userYaml("alice", ["user"], [keys.alice as string]) }),
  });
  let stopped = false;
  const idle = new Map<string, Idle[]>();
  /** An idle socket from `address`, opened again (after a breath) whenever the hub closes it. */
  const open = (address: string): Idle => {
    const entry: Idle = {
      socket: connect({ host: "127.0.0.1", port: b.port, localAddress: address }),
      greeted: false,
      closed: false,
    };
    entry.socket.on("data", (chunk: Buffer) => {
      if (chunk.toString("latin1").startsWith("SSH-2.0-")) entry.greeted = true;
    });
    entry.socket.on("error", () => {});
    entry.socket.on("close", () => {
      entry.closed = true;
      const list = idle.get(address) ?? [];
      const at = list.indexOf(entry);
      if (at >= 0) list.splice(at, 1);
      if (!stopped) setTimeout(() => !stopped && list.push(open(address)), 50);
    });
    return entry;
  };
  for (const address of ADDRESSES)
    idle.set(
      address,
      Array.from({ length: PER_ADDRESS }, () => open(address)),
    );
  t.teardown(() => {
    stopped = true;
    for (const list of idle.values()) for (const entry of list) entry.socket.destroy();
  });
  const held = (address: string) => (idle.get(address) ?? []).filter((e) => e.greeted && !e.closed).length;
  // The hub has answered each address's sockets: a greeting for those it keeps, a close for the rest.
  await waitFor("every address's sockets answered", () => ADDRESSES.every((address) => held(address) > 0), {
    attempts: 600,
    everyMs: 50,
  });

  const login = await run("ssh", [...b.sshArgs("alice"), "-T", "alice@127.0.0.1", "true"]);
  t.match(login.stderr, /name a pod in the login/, `alice logged in (${login.stderr.trim()})`);
  const most = Math.max(...ADDRESSES.map(held));
  t.ok(most <= 3, `each address holds at most 3 connections before login (the most: ${most})`);
});
