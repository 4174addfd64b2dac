// SFTP, scp (SFTP mode) and TCP forwarding through the bastion with the real OpenSSH clients:
// files move in and out of a process-runtime pod's directory and nowhere else, ports are
// forwarded to the pod (ports its own processes listen on), and only with the verb granted.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { freePort } from "../helpers/free-port.ts";
import { jobYaml, rawTaskYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import {
  forwardedSocket,
  podJobYaml,
  policyYaml,
  run,
  sshForward,
  startBastion,
  userYaml,
} from "./bastion-fixture.ts";

const POD = "vision-main-0";
/** The large download's size; the benchmark (hack/bench/access) moves 1 GiB. */
const BIG_BYTES = Number(process.env.RLARK_ACCESS_TEST_BYTES ?? 64 * 1024 * 1024);

async function sha256(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

const PORTS_POD = "ports-main-0";
/** More than the 2 MiB SSH channel windows. */
const BULK_BYTES = 6 * 1024 * 1024;

/**
 * A pod of two ports: HTTP on `http`, and on `bulk` BULK_BYTES random bytes to whoever connects,
 * with a file `sent` written in its directory once that connection has closed.
 */
function portsJobYaml(http: number, bulk: number): string {
  const script = [
    `require("node:http").createServer((q, s) => s.end("from the pod's port\\n")).listen(${http}, "127.0.0.1");`,
    `require("node:net").createServer((s) => { s.on("error", () => {}); s.once("close", () => require("node:fs").writeFileSync("sent", "")); s.end(require("node:crypto").randomBytes(${BULK_BYTES})); }).listen(${bulk}, "127.0.0.1");`,
  ].join(" ");
  return jobYaml("ports", [rawTaskYaml({ kind: "Deployment", command: [process.execPath, "-e", script] })]);
}

t.test("files and forwarding through hub and agent", async (t) => {
  const httpPort = await freePort();
  const bulkPort = await freePort();
  const b = await startBastion(t, {
    users: ["alice", "bob"],
    pods: [POD, PORTS_POD],
    files: (keys) => ({
      "users.yaml": [
        userYaml("alice", ["user"], [keys.alice as string]),
        userYaml("bob", ["user"], [keys.bob as string]),
      ].join("---\n"),
      "job.yaml": podJobYaml("vision"),
      "ports.yaml": portsJobYaml(httpPort, bulkPort),
      "policy.yaml": policyYaml(
        "alice-files",
        "  subjects:\n    users: [alice]\n  verbs: [files, forward]\n",
      ),
      "bob.yaml": policyYaml("bob-shell", "  subjects:\n    users: [bob]\n  verbs: [shell]\n"),
    }),
  });
  const podDir = path.join(b.dir, "state", "work", "agent-local_vision-main");
  const local = path.join(b.dir, "local");
  mkdirSync(local);
  const sftp = (user: string, batch: string) => {
    const file = path.join(b.dir, `batch-${randomBytes(4).toString("hex")}`);
    writeFileSync(file, batch);
    const args = b.sshArgs(user).map((a) => (a === "-p" ? "-P" : a));
    return run("sftp", [...args, "-b", file, `${user}+${POD}@127.0.0.1`], "", { cwd: local });
  };

  await t.test("sftp put, ls, rename, mkdir, get and rm inside the pod's directory", async (t) => {
    writeFileSync(path.join(local, "up.txt"), "uploaded\n");
    const result = await sftp(
      "alice",
      "put up.txt\nmkdir results\nrename up.txt results/moved.txt\nls results\nget results/moved.txt back.txt\nget marker.txt\nrm results/moved.txt\nrmdir results\n",
    );
    t.equal(result.code, 0, result.stderr);
    t.match(result.stdout, /results\/moved\.txt/);
    t.equal(readFileSync(path.join(local, "back.txt"), "utf8"), "uploaded\n");
    t.equal(readFileSync(path.join(local, "marker.txt"), "utf8"), "here\n");
    t.notOk(existsSync(path.join(podDir, "results")), "removed in the pod");
  });

  await t.test(
    "paths outside the pod's directory are refused, through .. , absolute paths and symlinks",
    async (t) => {
      symlinkSync("/etc", path.join(podDir, "etc-link"));
      for (const batch of [
        "get /etc/hostname",
        "get ../../../../../etc/hostname",
        "get etc-link/hostname",
        "ls /",
        "put marker.txt /tmp/escaped",
        "cd ..",
      ]) {
        const result = await sftp("alice", `${batch}\n`);
        t.not(result.code, 0, `${batch} fails`);
      }
      t.notOk(existsSync(path.join(local, "hostname")), "nothing came out");
      t.notOk(existsSync("/tmp/escaped"), "nothing went in");
      const link = await sftp("alice", "symlink /etc escape\n");
      t.not(link.code, 0, "no symlinks are made");
    },
  );

  await t.test("scp in its default SFTP mode copies both ways", async (t) => {
    const args = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
    writeFileSync(path.join(local, "scp-up.txt"), "by scp\n");
    const up = await run("scp", [
      ...args,
      path.join(local, "scp-up.txt"),
      `alice+${POD}@127.0.0.1:scp-up.txt`,
    ]);
    t.equal(up.code, 0, up.stderr);
    t.equal(readFileSync(path.join(podDir, "scp-up.txt"), "utf8"), "by scp\n");
    const down = await run("scp", [
      ...args,
      `alice+${POD}@127.0.0.1:marker.txt`,
      path.join(local, "scp-down.txt"),
    ]);
    t.equal(down.code, 0, down.stderr);
    t.equal(readFileSync(path.join(local, "scp-down.txt"), "utf8"), "here\n");
  });

  await t.test(`a ${BIG_BYTES}-byte download arrives intact`, async (t) => {
    const source = path.join(podDir, "big.bin");
    const chunk = randomBytes(1024 * 1024);
    writeFileSync(source, "");
    for (let written = 0; written < BIG_BYTES; written += chunk.length) {
      writeFileSync(source, chunk.subarray(0, Math.min(chunk.length, BIG_BYTES - written)), { flag: "a" });
    }
    const result = await sftp("alice", "get big.bin\n");
    t.equal(result.code, 0, result.stderr);
    t.equal(await sha256(path.join(local, "big.bin")), await sha256(source));
  });

  await t.test("files without the files verb are refused", async (t) => {
    const result = await sftp("bob", "ls\n");
    t.not(result.code, 0);
  });

  await t.test("ssh -L forwards a local port to the pod's port; only with the forward verb", async (t) => {
    const podPort = httpPort;
    const localPort = await freePort();
    const forward = sshForward(t, b.sshArgs("alice"), `${localPort}:${PORTS_POD}:${podPort}`);
    // The pod's server starts after the pod is Running: ask until it answers.
    const body = await waitFor(
      "the forwarded port answers",
      async () => (await fetch(`http://127.0.0.1:${localPort}/`)).text(),
      onRealServers,
    );
    t.equal(body, "from the pod's port\n");
    forward.kill();

    const denied = spawn(
      "ssh",
      [...b.sshArgs("bob"), "-N", "-L", `${localPort}:${PORTS_POD}:${podPort}`, "bob@127.0.0.1"],
      { stdio: "ignore" },
    );
    t.teardown(() => denied.kill());
    // A forward is asked for per connection: connect until ssh listens and the hub has refused one.
    await waitFor(
      "bob's forward refused and audited",
      async () => {
        await fetch(`http://127.0.0.1:${localPort}/`).then(
          () => t.fail("bob got through"),
          () => undefined,
        );
        return (await b.audit()).some(
          (l) => l.actor === "bob" && l.verb === "forward" && l.result === "denied",
        );
      },
      onRealServers,
    );
    denied.kill();
  });

  await t.test("ssh -L delivers every byte a pod's port sends before it closes", async (t) => {
    // More than the 2 MiB SSH channel windows: when the pod's end of the stream closes, the agent
    // and the hub still hold bytes for the next hop and must write them all before closing. The
    // pod's bulk port listens: its server started with the HTTP one the test above reached.
    const size = BULK_BYTES;
    const sent = path.join(b.dir, "state", "work", "agent-local_ports-main", "sent");
    const podPort = bulkPort;
    const localPort = await freePort();
    const forward = sshForward(t, b.sshArgs("alice"), `${localPort}:${PORTS_POD}:${podPort}`);
    const socket = await forwardedSocket(localPort);
    // The client reads nothing until the agent has read everything from the pod's port and closed it.
    socket.pause();
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    await waitFor("the pod's port done sending", () => existsSync(sent), onRealServers);
    const ended = new Promise((resolve) => socket.once("close", resolve));
    socket.resume();
    await ended;
    t.equal(received, size, "every byte arrived");
    forward.kill();
  });

  await t.test("each transfer and forward is audited with its bytes", async (t) => {
    const lines = await b.audit();
    const files = lines.filter((l) => l.actor === "alice" && l.verb === "files" && l.result === "ok");
    t.ok(
      files.some((l) => l.bytesOut >= BIG_BYTES),
      "the big download counted",
    );
    t.ok(
      lines.some((l) => l.actor === "alice" && l.verb === "forward" && l.result === "ok" && l.bytesOut > 0),
    );
    t.ok(lines.some((l) => l.actor === "bob" && l.verb === "files" && l.result === "denied"));
  });
});
