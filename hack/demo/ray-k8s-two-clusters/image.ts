// The demo's image with real Ray (no registry is reachable, so it is made here): what the agent's
// Ray scripts need (busybox, bash, Debian's python3.11 and its standard library:
// tests/helpers/ray-standin-image.ts) plus a venv at /opt/ray holding the site-packages of a
// `pip install ray==<version>` done on this machine, and every shared library their ELF files load.
// /opt/ray/bin comes first on PATH, so `ray` and the scripts' `python3` are the venv's.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { scriptsRootfs, writeImageArchive } from "../../../tests/helpers/ray-standin-image.ts";

/** ELF files under `dir` (shared objects and executables), by their magic bytes. */
function elfFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile() && statSync(p).size > 64) {
        const fd = openSync(p, "r");
        const head = Buffer.alloc(4);
        readSync(fd, head, 0, 4, 0);
        closeSync(fd);
        if (head.toString("latin1") === "\x7fELF") out.push(p);
      }
    }
  };
  walk(dir);
  return out;
}

/** The libraries outside `rootfs` that `files` load (ldd), copied to the same paths in it. */
function copyLibraries(files: string[], rootfs: string): number {
  const libraries = new Set<string>();
  for (const file of files) {
    let text = "";
    try {
      text = execFileSync("ldd", [file], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    } catch {
      continue; // statically linked, or not for this machine
    }
    for (const m of text.matchAll(/=> (\/\S+) \(0x/g)) libraries.add(m[1] as string);
    for (const m of text.matchAll(/^\s+(\/\S+) \(0x/gm)) libraries.add(m[1] as string);
  }
  let copied = 0;
  for (const lib of libraries) {
    if (lib.startsWith(rootfs) || !statSync(lib).isFile()) continue;
    const target = join(rootfs, lib);
    if (existsSync(target)) continue;
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(lib, target); // follows symlinks: the file itself
    copied++;
  }
  return copied;
}

/**
 * Builds the archive of `name` in `workDir` from the venv `venv` (its lib/python3.11/site-packages);
 * returns its path.
 */
export function buildRayImage(workDir: string, venv: string, name: string): string {
  const rootfs = join(workDir, "rootfs");
  scriptsRootfs(rootfs);
  const site = join(venv, "lib/python3.11/site-packages");
  const target = join(rootfs, "opt/ray/lib/python3.11/site-packages");
  mkdirSync(target, { recursive: true });
  cpSync(site, target, {
    recursive: true,
    filter: (src) =>
      !/\/(pip|setuptools|_distutils_hack|pkg_resources|distutils-precedence\.pth)(-[^/]*)?(\/|$)/.test(
        src.slice(site.length),
      ),
  });
  mkdirSync(join(rootfs, "opt/ray/bin"), { recursive: true });
  symlinkSync("/usr/bin/python3.11", join(rootfs, "opt/ray/bin/python3"));
  symlinkSync("python3", join(rootfs, "opt/ray/bin/python"));
  // a venv of Debian's Python: sys.prefix becomes /opt/ray, so its site-packages is on the path
  writeFileSync(
    join(rootfs, "opt/ray/pyvenv.cfg"),
    "home = /usr/bin\ninclude-system-site-packages = false\n",
  );
  // Ray's own CLI on Debian's Python. Ray binds the node IP (--node-ip-address, the pod's virtual
  // IP): the kubernetes runtime's rlark-lo-addr init step has put it on the pod's loopback.
  writeFileSync(
    join(rootfs, "opt/ray/bin/ray"),
    [
      "#!/bin/sh",
      'exec /opt/ray/bin/python3 -c \'import sys; from ray.scripts.scripts import main; sys.argv[0] = "ray"; sys.exit(main())\' "$@"',
      "",
    ].join("\n"),
  );
  chmodSync(join(rootfs, "opt/ray/bin/ray"), 0o755);
  const copied = copyLibraries(
    [...elfFiles(target), ...elfFiles(join(rootfs, "usr/lib/python3.11/lib-dynload"))],
    rootfs,
  );
  console.log(`image ${name}: ray's site-packages and ${copied} shared libraries they load`);
  return writeImageArchive(rootfs, workDir, name, ["PATH=/opt/ray/bin:/usr/local/bin:/usr/bin:/bin"]);
}
