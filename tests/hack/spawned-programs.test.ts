// Every program the code spawns is on a fresh CI machine: installed by .ci/run, built by the
// project, or part of every Debian system. The list is read from the sources
// (hack/ci/spawned-programs.ts), so a new `spawn("x", ...)` fails here until .ci/run installs x
// (`spawn socat ENOENT` on a fresh machine is how this test came to be).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import t from "tap";
import { spawnedPrograms } from "../../hack/ci/spawned-programs.ts";

const root = join(import.meta.dirname, "../..");

/** Built or installed by the project itself (npm, the package's bins, hack/kube/build, hack/tools/build,
 * hack/network/build-*) or by the machine kind (Go ≥ 1.26 at /usr/local/go, which Debian lacks). */
const PROJECT = new Set([
  "node",
  "npm",
  "npx",
  "rlark",
  "rosctr",
  "camctr",
  "rlark-net",
  "impair",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kubelet",
  "kubectl",
  "etcd",
  "kwok",
  "helm",
  "kustomize",
  "tensorboard",
  "go",
]);

/** Programs of Debian's Priority: required packages, present on every Debian system. */
const DEBIAN_BASE = new Set([
  ...["bash", "sh", "dash", "env", "chmod", "chown", "du", "head", "ls", "mkdir", "mkfifo", "mknod"],
  ...["rm", "sleep", "cat", "chroot", "id", "stat", "tail", "kill", "find", "xargs", "tar", "which"],
  ...["getent", "ldd", "groupadd", "groupdel", "useradd", "userdel", "mount", "umount", "nsenter"],
  ...["unshare", "setpriv", "flock", "awk", "grep", "sed", "gzip", "dpkg", "cp", "sha256sum"],
]);

/** The Debian package each other program comes from; .ci/run must install it. */
const PACKAGE: Record<string, string> = {
  ip: "iproute2",
  ss: "iproute2",
  sysctl: "procps",
  ssh: "openssh-client",
  "ssh-keygen": "openssh-client",
  "ssh-agent": "openssh-client",
  scp: "openssh-client",
  sftp: "openssh-client",
  sshd: "openssh-server",
  "sftp-server": "openssh-sftp-server",
  python3: "python3",
  git: "git",
  "git-upload-pack": "git",
  curl: "curl",
  socat: "socat",
  iperf3: "iperf3",
  iptables: "iptables",
  nft: "nftables",
  ffmpeg: "ffmpeg",
  ffprobe: "ffmpeg",
  buildah: "buildah",
  ctr: "containerd",
  containerd: "containerd",
  runc: "runc",
  docker: "docker.io",
  dockerd: "docker.io",
  busybox: "busybox-static",
  "systemd-analyze": "systemd",
  "redis-server": "redis-server",
  "redis-cli": "redis-tools",
  chromium: "chromium",
  time: "time",
  strip: "binutils",
};

/** The packages .ci/run installs when missing: every `missing+=(pkg)`. */
function ciPackages(): Set<string> {
  const script = readFileSync(join(root, ".ci/run"), "utf8");
  return new Set(
    [...script.matchAll(/missing\+=\(([^)]+)\)/g)].flatMap((m) => (m[1] as string).split(/\s+/)),
  );
}

t.test("the scan finds programs spawned directly, through wrappers and through ip netns exec", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "spawned-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, "helper.ts"),
    [
      'import { execFileSync, spawn } from "node:child_process";',
      "export const sh = (cmd: string, args: string[]) => execFileSync(cmd, args);",
      'spawn("alpha", ["x"]);',
      'const SERVER = "/usr/lib/beta";',
      "spawn(SERVER, []);",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "user.test.ts"),
    [
      'import { sh } from "./helper.ts";',
      'sh("ip", ["netns", "exec", "ns1", "gamma", "--flag"]);',
      'sh("bash", ["-c", "exec -a fake delta 300"]);',
      'other("not-a-program");',
    ].join("\n"),
  );
  const found = spawnedPrograms([dir], dir).map((s) => `${s.program}@${s.at}`);
  t.same(found.sort(), [
    "/usr/lib/beta@helper.ts:5",
    "alpha@helper.ts:3",
    "bash@user.test.ts:3",
    "delta@user.test.ts:3",
    "gamma@user.test.ts:2",
    "ip@user.test.ts:2",
  ]);
});

t.test(
  "every spawned program is installed by .ci/run, built by the project or in Debian's base",
  async (t) => {
    const spawns = spawnedPrograms();
    const names = new Set(spawns.map((s) => basename(s.program)));
    // the scan reads the real tree: the programs that started this test are among its findings
    for (const known of ["socat", "ip", "ssh", "git", "python3"]) t.ok(names.has(known), `${known} is found`);
    const installed = ciPackages();
    const unknown: string[] = [];
    for (const { program, at } of spawns) {
      const name = basename(program);
      if (PROJECT.has(name) || DEBIAN_BASE.has(name)) continue;
      const pkg = PACKAGE[name];
      if (pkg === undefined)
        unknown.push(`${name} (spawned at ${at}): not in this test's table; add its Debian package`);
      else if (!installed.has(pkg))
        unknown.push(`${name} (spawned at ${at}): .ci/run does not install ${pkg}`);
    }
    t.same([...new Set(unknown)], [], "no spawned program is missing from a fresh machine");
  },
);
