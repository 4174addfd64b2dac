// The container images as a cluster runs them, without a container runtime (podman run is refused
// here: crun cannot set rlimits): hack/images/build writes the OCI archives (or keeps them when
// their inputs are unchanged), each is opened with buildah in a private storage root and mounted,
// and its entrypoint runs under chroot as the image's non-root user. The hub follows a file://
// repository inside its own rootfs and must answer /readyz. Needs root and buildah.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { freePort } from "../helpers/free-port.ts";
import { waitFor } from "../helpers/wait-for.ts";

const root = path.resolve(import.meta.dirname, "../..");
const version = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string })
  .version;
const UID = 65532;
// By path: the environment given to the image's processes has no /usr/sbin on PATH.
const CHROOT = "/usr/sbin/chroot";
const ENV = "/usr/bin/env";
/**
 * rlark/rlark unpacked: issue 14's 120 MB target (ADR 0006) plus the docker runtime's client
 * (dockerode and docker-modem, 1.2 MB) and stop 35's features (125.1 MB; ADR 0006 says what is
 * owed): 0.9 MB above that.
 */
const CEILING_MB = 126;
const ENTRY = ["/usr/local/bin/node", "/usr/local/lib/rlark/node_modules/rlark/bin/rlark.js"];

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 16 * 1024 * 1024, ...options });
  return { status: result.status, stdout: String(result.stdout), stderr: String(result.stderr) };
}

function mustRun(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = run(command, args, options);
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(" ")}: exit ${result.status}\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

const canBuild = process.getuid?.() === 0 && run("buildah", ["--version"]).status === 0;
if (!canBuild) {
  // Not a skip: CI runs as root and .ci/run installs buildah, so a missing one is a broken set-up.
  t.fail("building and mounting images needs root and buildah (apt-get install buildah)");
} else {
  const work = mkdtempSync(path.join(tmpdir(), "rlark-images-"));
  const storage = [
    "--root",
    path.join(work, "root"),
    "--runroot",
    path.join(work, "run"),
    "--storage-driver",
    "vfs",
  ];
  const buildah = (...args: string[]) => mustRun("buildah", [...storage, ...args]).trim();
  const containers: string[] = [];
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await new Promise((resolve) => child.once("close", resolve));
      }
    }
    for (const container of containers) {
      run("buildah", [...storage, "umount", container]);
      run("buildah", [...storage, "rm", container]);
    }
    run("buildah", [...storage, "rmi", "--all", "--force"]);
    rmSync(work, { recursive: true, force: true });
  });

  const build = mustRun(path.join(root, "hack/images/build"), []);
  const archive = (component: string) => {
    const file = path.join(
      process.env.RLARK_CACHE ?? path.join(process.env.HOME ?? "/root", ".cache/rlark"),
      "images",
      component === "rlark" ? `rlark-${version}.oci.tar` : `rlark-${component}-${version}.oci.tar`,
    );
    return file;
  };

  /** The image's config (OCI) and its rootfs, mounted; the rootfs gets the device nodes a runtime gives. */
  const open = (component: string) => {
    const container = buildah("from", "--quiet", `oci-archive:${archive(component)}`);
    containers.push(container);
    const rootfs = buildah("mount", container);
    const inspect = JSON.parse(buildah("inspect", container)) as {
      OCIv1: {
        config: {
          User: string;
          Labels: Record<string, string>;
          Entrypoint: string[];
          Cmd: string[];
          Env: string[];
        };
      };
    };
    mkdirSync(path.join(rootfs, "dev"), { recursive: true });
    for (const [name, minor] of [
      ["null", 3],
      ["zero", 5],
      ["random", 8],
      ["urandom", 9],
    ] as const) {
      mustRun("mknod", ["-m", "666", path.join(rootfs, "dev", name), "c", "1", String(minor)]);
    }
    return { rootfs, config: inspect.OCIv1.config };
  };

  // `env -i`: tap adds NODE_OPTIONS (its coverage hooks, from the checkout) to every child's
  // environment, which the node inside the image cannot load.
  const chroot = (rootfs: string, ...args: string[]) => [
    "-i",
    "HOME=/home/rlark",
    "PATH=/usr/local/bin:/usr/bin",
    CHROOT,
    `--userspec=${UID}:${UID}`,
    rootfs,
    ...args,
  ];

  t.test("the build writes the archives (or keeps them) and says what dominates their size", async (t) => {
    t.match(build, /rlark-[\d.]+\.oci\.tar\t\d+ MB/);
    t.match(build, /rlark-sidecar-.*\.oci\.tar\t\d+ MB/);
    t.match(build, /rlark-hub-.*\.oci\.tar\t\d+ MB/);
    // A cold build says "built", a warm one that it kept the archives; both say what dominates.
    t.match(build, /built rlark\/rlark|inputs unchanged/);
    t.match(build, /node binary \(stripped\)\s+\d+/);
    t.ok(existsSync(archive("rlark")) && existsSync(archive("sidecar")) && existsSync(archive("hub")));
    t.comment(build.trim());
  });

  t.test("rlark/rlark (the agent's image): non-root, labelled, no shell, runs rlark", async (t) => {
    const { rootfs, config } = open("rlark");
    t.equal(config.User, `${UID}:${UID}`);
    t.same(config.Entrypoint, ENTRY);
    t.same(config.Cmd, ["agent"]);
    t.equal(config.Labels["org.opencontainers.image.version"], version);
    t.equal(config.Labels["org.opencontainers.image.source"], "https://github.com/rlinf/rlark");
    const revision = config.Labels["org.opencontainers.image.revision"] ?? "";
    t.match(revision, /^[0-9a-f]{40}$/);
    t.equal(
      run("git", ["cat-file", "-e", `${revision}^{commit}`], { cwd: root }).status,
      0,
      "a commit of this repository",
    );
    t.match(config.Labels["io.rlinf.debian-packages"], /libc6=/);
    for (const shell of ["usr/bin/sh", "usr/bin/dash", "usr/bin/bash", "usr/bin/git", "usr/bin/ssh"]) {
      t.notOk(existsSync(path.join(rootfs, shell)), `no ${shell}`);
    }
    for (const tool of ["usr/local/bin/rlark-net", "usr/sbin/iptables"])
      t.notOk(existsSync(path.join(rootfs, tool)), `no ${tool}: only rlark/sidecar has the data path`);
    t.match(mustRun(ENV, chroot(rootfs, "/usr/local/bin/node", "--version")), /^v24\./);
    t.equal(mustRun(ENV, chroot(rootfs, ...ENTRY, "--version")).trim(), version);
    t.match(mustRun(ENV, chroot(rootfs, ...ENTRY, "agent", "--help")), /--runtime/);
    // The dependencies are esbuild bundles (hack/images/bundle-deps.ts): this loads ajv and the CRD
    // emitter through them (`rlark validate`, which needs the hub's layer, runs in the hub test).
    t.match(mustRun(ENV, chroot(rootfs, ...ENTRY, "crds")), /kind: CustomResourceDefinition/);
    for (const hubOnly of ["dist/source", "fleet", "examples"])
      t.notOk(
        existsSync(path.join(rootfs, "usr/local/lib/rlark/node_modules/rlark", hubOnly)),
        `${hubOnly} is in the hub's layer only`,
      );
    t.notOk(
      existsSync(path.join(rootfs, "usr/local/lib/rlark/node_modules/@kubernetes/client-node/dist")),
      "client-node is one bundle, not its 25 MB of files",
    );
    // The unpacked root filesystem (what a node stores), not the gzipped download. Issue 14 aims at
    // 120 MB: node and its libraries are 113 of it, the package and its bundles the rest; the
    // Domain data path (rlark-net, iptables) lives in rlark/sidecar (ADR 0006). CEILING_MB holds
    // today's size so a dependency imported whole, or a new tool, does not slip in unnoticed.
    const megabytes = Number(mustRun("du", ["-sb", rootfs]).split("\t")[0]) / 1e6;
    t.ok(
      megabytes < CEILING_MB,
      `the agent image unpacks to ${megabytes.toFixed(1)} MB (< ${CEILING_MB} MB)`,
    );
  });

  t.test("install-clis: rosctr and camctr run in a task image with a shell but no node", async (t) => {
    const { rootfs } = open("rlark");
    // as the controllers' DaemonSet runs it: root (the host folder is root's), no shell in the image,
    // and /proc, which a container runtime mounts (it reads node's libraries from /proc/self/maps)
    mkdirSync(path.join(rootfs, "proc"), { recursive: true });
    mustRun("mount", ["-t", "proc", "proc", path.join(rootfs, "proc")]);
    t.teardown(() => run("umount", [path.join(rootfs, "proc")]));
    mustRun(ENV, [
      "-i",
      "HOME=/root",
      "PATH=/usr/local/bin:/usr/bin",
      CHROOT,
      rootfs,
      ...ENTRY,
      "install-clis",
      "--to",
      "/tmp/clis",
    ]);
    const installed = path.join(rootfs, "tmp/clis");
    const megabytes = Number(mustRun("du", ["-sb", path.join(installed, "runtime")]).split("\t")[0]) / 1e6;
    t.comment(
      `the CLIs' runtime (node, its libraries, rlark) takes ${megabytes.toFixed(1)} MB on the host, once per node`,
    );
    // A task image: dash as /bin/sh with its own libraries, nothing else; the device plugin's mounts.
    const pod = path.join(work, "pod");
    for (const file of [
      "/usr/bin/dash",
      ...mustRun("ldd", ["/usr/bin/dash"])
        .split("\n")
        .flatMap((l) => l.match(/(\/\S+)/g) ?? []),
    ]) {
      mkdirSync(path.join(pod, path.dirname(file)), { recursive: true });
      copyFileSync(file, path.join(pod, file));
    }
    mkdirSync(path.join(pod, "bin"), { recursive: true });
    copyFileSync("/usr/bin/dash", path.join(pod, "bin/sh"));
    cpSync(path.join(installed, "runtime"), path.join(pod, "opt/rlark/cli"), {
      recursive: true,
      verbatimSymlinks: true,
    });
    for (const cli of ["rosctr", "camctr"])
      cpSync(path.join(installed, cli), path.join(pod, "usr/local/bin", cli));
    t.notOk(existsSync(path.join(pod, "usr/local/bin/node")), "the task image has no node");
    const inPod = (...args: string[]) =>
      run(ENV, ["-i", "PATH=/usr/local/bin:/usr/bin:/bin", CHROOT, `--userspec=${UID}:${UID}`, pod, ...args]);
    t.match(inPod("/usr/local/bin/rosctr", "--help").stdout, /rosctr/);
    t.match(inPod("/usr/local/bin/camctr", "--help").stdout, /camctr/);
    const absent = inPod("/usr/local/bin/rosctr", "status");
    t.not(absent.status, 0, "no controller socket: an error");
    t.match(absent.stderr, /ros-controller\.sock/, "naming the socket it looked for");
  });

  t.test("rlark/sidecar: rlark/rlark plus rlark-net, iptables and ip", async (t) => {
    const { rootfs, config } = open("sidecar");
    t.equal(config.User, `${UID}:${UID}`);
    t.same(config.Entrypoint, ENTRY, "inherited from rlark/rlark");
    t.same(config.Cmd, ["sidecar"]);
    t.equal(config.Labels["org.opencontainers.image.version"], version);
    t.match(config.Labels["io.rlinf.debian-packages"], /iptables=/);
    t.match(mustRun(ENV, chroot(rootfs, "/usr/local/bin/rlark-net", "--help")), /usage: rlark-net init/);
    // the init container's iptables (nft backend) loads with its libraries and extensions
    t.match(
      mustRun(ENV, chroot(rootfs, "/usr/sbin/iptables", "--version")),
      /iptables v[\d.]+ \(nf_tables\)/,
    );
    // rlark-net init runs it by name, on the image's PATH (a real pod's init container has no more)
    t.match(
      mustRun(ENV, [
        "-i",
        `PATH=${config.Env.find((e) => e.startsWith("PATH="))?.slice(5)}`,
        CHROOT,
        rootfs,
        "iptables",
        "--version",
      ]),
      /iptables v[\d.]+ \(nf_tables\)/,
      "iptables is on the image's PATH",
    );
    t.match(mustRun(ENV, chroot(rootfs, ...ENTRY, "sidecar", "--help")), /--/);
    // devinit (the device pods' init container) sets its macvlan up with iproute2's ip
    t.match(mustRun(ENV, chroot(rootfs, "/usr/bin/ip", "-V")), /ip utility/);
  });

  t.test("hub: non-root, git and ssh inside, answers /readyz for a repository in its rootfs", async (t) => {
    const { rootfs, config } = open("hub");
    t.equal(config.User, `${UID}:${UID}`);
    t.same(config.Entrypoint, ENTRY, "inherited from rlark/rlark");
    t.same(config.Cmd, ["hub"]);
    t.equal(config.Labels["org.opencontainers.image.version"], version);
    t.match(config.Labels["io.rlinf.debian-packages"], /git=.*openssh-client=/);
    t.match(mustRun(ENV, chroot(rootfs, "/usr/bin/git", "--version")), /^git version/);
    t.match(run(ENV, chroot(rootfs, "/usr/bin/ssh", "-V")).stderr, /OpenSSH/);
    // Both YAML parsers, ajv and the generated validators' runtime requires, as bundled.
    const examples = "/usr/local/lib/rlark/node_modules/rlark/examples";
    t.match(
      mustRun(ENV, chroot(rootfs, ...ENTRY, "validate", `${examples}/jobs`, `${examples}/domains`)),
      /valid/,
    );

    // The repository, owned by the hub's user (git refuses a repository of another owner).
    const repo = path.join(rootfs, "tmp/repo");
    cpSync(path.join(root, "examples"), repo, { recursive: true });
    rmSync(path.join(repo, "invalid"), { recursive: true });
    const git = (...args: string[]) =>
      mustRun("git", ["-c", "user.name=u", "-c", "user.email=u@example.com", ...args], { cwd: repo });
    git("init", "--quiet", "--initial-branch", "main");
    git("add", "--all");
    git("commit", "--quiet", "-m", "fleet");
    mustRun("chown", ["-R", `${UID}:${UID}`, repo]);

    const [http, ssh] = [await freePort(), await freePort()];
    const hub = spawn(
      ENV,
      chroot(
        rootfs,
        ...ENTRY,
        "hub",
        "--repo",
        "file:///tmp/repo",
        "--data-dir",
        "/tmp/data",
        "--http",
        `127.0.0.1:${http}`,
        "--ssh",
        `127.0.0.1:${ssh}`,
      ),
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(hub);
    let output = "";
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-16_384);
    };
    hub.stdout?.on("data", keep);
    hub.stderr?.on("data", keep);
    const ready = await waitFor(
      "the hub in the image answers /readyz with 200",
      async () => {
        if (hub.exitCode !== null) throw new Error(`the hub exited ${hub.exitCode}:\n${output}`);
        const response = await fetch(`http://127.0.0.1:${http}/readyz`);
        return response.status === 200 && (await response.text());
      },
      { attempts: 600, everyMs: 100 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${output}`);
    });
    t.ok(ready);
    hub.kill("SIGTERM");
    const code = await new Promise((resolve) => hub.once("close", resolve));
    t.equal(code, 0, "stops cleanly on SIGTERM");
  });
}
