// A real Docker engine of the test's own: dockerd (Debian's docker.io, as root) with its data root,
// exec root, socket and pidfile in a temp dir, so it starts its own containerd there too and never
// meets the machine's containerd (hack/kube's kubelets) or another test's engine. It runs in a
// network namespace of its own, where the default bridge and its iptables rules work without
// touching the host's FORWARD policy or another engine's docker0. No registry is reachable: the
// image the tests run is imported from a rootfs made of Debian's busybox-static and OpenSSH's sftp-server.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import Docker from "dockerode";
import type { Test } from "tap";
import { copyWithLibraries, SFTP_SERVER } from "../../hack/kube/images.ts";
import { waitFor } from "./wait-for.ts";

export const TEST_IMAGE = "rlark-test/busybox:1";

export interface Dockerd {
  /** unix:///…/docker.sock, as `--docker-host` takes it. */
  host: string;
  socket: string;
  client: Docker;
  /** The tests' image, imported: busybox's applets in /bin. */
  image: string;
  /** Ends the engine (containers stop with it); at teardown too. */
  stop(): Promise<void>;
}

function docker(socket: string, args: string[], input?: Buffer): string {
  return execFileSync("docker", ["-H", `unix://${socket}`, ...args], {
    encoding: "utf8",
    ...(input ? { input } : {}),
    stdio: ["pipe", "pipe", "pipe"],
  });
}

async function busyboxRootfs(dir: string): Promise<void> {
  const bin = path.join(dir, "bin");
  await mkdir(bin, { recursive: true });
  await copyFile("/bin/busybox", path.join(bin, "busybox"));
  const applets = execFileSync("/bin/busybox", ["--list"], { encoding: "utf8" }).split("\n").filter(Boolean);
  for (const applet of applets) if (applet !== "busybox") await symlink("busybox", path.join(bin, applet));
  await mkdir(path.join(dir, "tmp"), { mode: 0o1777 });
  // OpenSSH's sftp-server and its libraries: SFTP into docker pods runs the container's own. It
  // looks its user up, as every image with a passwd file lets it.
  copyWithLibraries(SFTP_SERVER, dir);
  await mkdir(path.join(dir, "etc"), { recursive: true });
  await writeFile(path.join(dir, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  await writeFile(path.join(dir, "etc/group"), "root:x:0:\n");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function startDockerd(t: Test): Promise<Dockerd> {
  // Short: the sockets under it must fit a unix socket path (108 bytes).
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-dk-"));
  const socket = path.join(dir, "docker.sock");
  const netns = `rlark-dk-${randomBytes(4).toString("hex")}`;
  execFileSync("ip", ["netns", "add", netns]);
  execFileSync("ip", ["netns", "exec", netns, "ip", "link", "set", "lo", "up"]);
  // nsenter, not `ip netns exec`: that one remounts /sys, hiding the cgroups dockerd needs.
  const child: ChildProcess = spawn(
    "nsenter",
    [
      `--net=/run/netns/${netns}`,
      "dockerd",
      "--storage-driver=vfs",
      "--data-root",
      path.join(dir, "data"),
      "--exec-root",
      path.join(dir, "exec"),
      "-H",
      `unix://${socket}`,
      "--pidfile",
      path.join(dir, "pid"),
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  // Bounded: the last 16 KiB of its log, to say why it would not start.
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-16_384);
  });
  let exited = false;
  child.on("exit", () => {
    exited = true;
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    const containerdPid = Number(
      existsSync(path.join(dir, "exec/containerd/containerd.pid"))
        ? readFileSync(path.join(dir, "exec/containerd/containerd.pid"), "utf8")
        : 0,
    );
    if (!exited) child.kill("SIGTERM");
    await waitFor("dockerd to exit", () => exited, { attempts: 600 });
    if (containerdPid > 0 && alive(containerdPid)) process.kill(containerdPid, "SIGTERM");
    await waitFor("its containerd to exit", () => !(containerdPid > 0 && alive(containerdPid)), {
      attempts: 600,
    });
    // What a crashed engine may have left mounted under its roots.
    const mounts = readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[1] ?? "")
      .filter((m) => m.startsWith(dir))
      .sort()
      .reverse();
    for (const m of mounts) execFileSync("umount", ["-l", m]);
    execFileSync("ip", ["netns", "del", netns]);
    await rm(dir, { recursive: true, force: true });
  };
  t.teardown(stop);
  const client = new Docker({ socketPath: socket });
  await waitFor(
    "dockerd to answer /_ping",
    async () => {
      if (exited) throw new Error(`dockerd exited: ${log}`);
      await client.ping();
      return true;
    },
    { attempts: 600 },
  );
  const rootfs = path.join(dir, "rootfs");
  await busyboxRootfs(rootfs);
  const tar = execFileSync("tar", ["-C", rootfs, "-c", "."], { maxBuffer: 64 * 1024 * 1024 });
  docker(socket, ["import", "-c", "ENV PATH=/bin", "-", TEST_IMAGE], tar);
  return { host: `unix://${socket}`, socket, client, image: TEST_IMAGE, stop };
}
