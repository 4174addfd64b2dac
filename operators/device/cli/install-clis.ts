// `rlark install-clis --to DIR`: puts rosctr and camctr where the device plugin mounts them from
// (docs/devices.md, "The CLIs in pods"), runnable in task images that have no node. Task images
// are the users' (ROS on Ubuntu, ...): their libc may be older than node needs, so the CLIs bring
// their own runtime: this node binary, the shared libraries it loaded (read from /proc/self/maps,
// so no ldd), its dynamic loader and this installed package, under DIR/runtime, which Allocate
// mounts at CLI_RUNTIME_CONTAINER_DIR. DIR/rosctr and DIR/camctr are `/bin/sh` launchers that run
// node through that loader; a task image without a shell speaks gRPC to the socket instead.
// Run in the controllers' DaemonSet as an init container of the rlark image, which has no shell:
// everything here is file copies. The runtime is replaced whole (written beside, then renamed).
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { CLI_RUNTIME_CONTAINER_DIR, CLIS } from "../paths.ts";

/** The shared libraries the running node loaded, the dynamic loader among them. */
export function loadedLibraries(maps = readFileSync("/proc/self/maps", "utf8")): string[] {
  const libraries = new Set<string>();
  for (const line of maps.split("\n")) {
    const file = line.trim().split(/\s+/)[5];
    if (file?.startsWith("/") && /\.so(\.\d+)*$/.test(file)) libraries.add(file);
  }
  return [...libraries].sort();
}

/** The folder that holds node_modules/rlark: this package as npm installed it. */
export function installRoot(packageRoot: string): string {
  const modules = path.dirname(packageRoot);
  if (path.basename(modules) !== "node_modules" || path.basename(packageRoot) !== "rlark")
    throw new Error(
      `install-clis copies an installed rlark package (node_modules/rlark, as in the rlark image); ${packageRoot} is not one`,
    );
  return path.dirname(modules);
}

export interface InstallClisOptions {
  /** The host folder the device plugin mounts the CLIs from. */
  to: string;
  /** This package's root (node_modules/rlark). */
  packageRoot: string;
  nodeBinary?: string;
  libraries?: string[];
}

/** Installs; returns what it wrote, for the log. */
export function installClis(options: InstallClisOptions): { clis: string[]; runtime: string } {
  const root = installRoot(options.packageRoot);
  const libraries = options.libraries ?? loadedLibraries();
  const loader = libraries.find((l) => /^ld-linux[^/]*\.so/.test(path.basename(l)));
  if (!loader) throw new Error("no dynamic loader among node's libraries (/proc/self/maps)");
  mkdirSync(options.to, { recursive: true });
  const runtime = path.join(options.to, "runtime");
  const next = path.join(options.to, `.runtime-${process.pid}`);
  rmSync(next, { recursive: true, force: true });
  mkdirSync(path.join(next, "lib"), { recursive: true });
  copyFileSync(options.nodeBinary ?? process.execPath, path.join(next, "node"));
  chmodSync(path.join(next, "node"), 0o755);
  for (const library of libraries) {
    const name = path.basename(library);
    copyFileSync(library, path.join(next, "lib", name));
    // /proc/self/maps names the file (libstdc++.so.6.0.30); the loader looks for the soname (libstdc++.so.6)
    const soname = name.replace(/^(.*\.so\.\d+)(\.\d+)+$/, "$1");
    if (soname !== name) symlinkSync(name, path.join(next, "lib", soname));
  }
  cpSync(root, path.join(next, "rlark"), { recursive: true, dereference: false, verbatimSymlinks: true });
  const old = path.join(options.to, `.runtime-old-${process.pid}`);
  if (existsSync(runtime)) renameSync(runtime, old);
  renameSync(next, runtime);
  rmSync(old, { recursive: true, force: true });

  const at = CLI_RUNTIME_CONTAINER_DIR;
  const clis: string[] = [];
  for (const cli of CLIS) {
    const script = path.posix.join(at, "rlark/node_modules/rlark/bin", `${cli}.js`);
    const launcher = [
      "#!/bin/sh",
      `# ${cli}, installed by \`rlark install-clis\`: node, its libraries and rlark are in ${at}`,
      `exec ${at}/lib/${path.basename(loader)} --library-path ${at}/lib ${at}/node ${script} "$@"`,
      "",
    ].join("\n");
    const file = path.join(options.to, cli);
    writeFileSync(`${file}.tmp`, launcher, { mode: 0o755 });
    renameSync(`${file}.tmp`, file);
    clis.push(file);
  }
  return { clis, runtime };
}
