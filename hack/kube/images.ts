// The images a real node needs, built here because no registry is reachable: one rootfs of
// Debian's static busybox (/bin/busybox from busybox-static, every applet a symlink to it),
// OpenSSH's sftp-server and vim-tiny with their shared libraries (SFTP into pods through
// pods/exec; a full-screen editor for the web terminal), as two OCI images, the pod sandbox
// ("pause") and a busybox for test pods. Written as one OCI image layout archive that
// `ctr images import` reads (each manifest named by io.containerd.image.name).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Image names on every real node (pods use them with imagePullPolicy Never). */
export const REAL_NODE_IMAGES = {
  /** containerd's CRI sandbox_image: sleeps until killed (containerd stops sandboxes by SIGKILL). */
  pause: "rlark.local/pause:busybox",
  /**
   * busybox with every applet on PATH (sh, httpd, nc, tar, ...), /usr/lib/openssh/sftp-server and
   * vim (Debian's vim-tiny); its default command is sh.
   */
  busybox: "rlark.local/busybox:1",
} as const;

export const BUSYBOX = "/bin/busybox";
export const SFTP_SERVER = "/usr/lib/openssh/sftp-server";
/** Debian's vim-tiny: the web terminal's tests run a real vim in a real pod. */
export const VIM = "/usr/bin/vim.tiny";
/** The terminal descriptions vim looks up for the TERM a session sets (ncurses-base). */
const TERMINFO = ["x/xterm", "x/xterm-256color", "v/vt100", "d/dumb", "l/linux"];

/** Copies a dynamically linked program and the libraries ldd names to the same paths in `rootfs`. */
export function copyWithLibraries(program: string, rootfs: string): void {
  const libraries = [...execFileSync("ldd", [program], { encoding: "utf8" }).matchAll(/(\/\S+) \(0x/g)].map(
    (m) => m[1] as string,
  );
  for (const file of [program, ...libraries]) {
    mkdirSync(dirname(join(rootfs, file)), { recursive: true });
    copyFileSync(file, join(rootfs, file)); // follows symlinks: the image gets the files themselves
  }
}

const sha256 = (data: Buffer | string): string => createHash("sha256").update(data).digest("hex");

/** One image of an archive: its name (io.containerd.image.name), default command and environment. */
export interface OciImage {
  name: string;
  cmd: string[];
  env: string[];
}

/**
 * `rootfs` as one layer shared by `images`, in an OCI image layout archive `workDir/archiveName`
 * that `ctr images import` reads; removes `rootfs` and everything else it wrote. Fixed owner and
 * mtime: the layer (and so the image IDs) is the same for the same files.
 */
export function writeOciArchive(
  rootfs: string,
  workDir: string,
  archiveName: string,
  images: OciImage[],
): string {
  const layout = join(workDir, "layout");
  const blobs = join(layout, "blobs/sha256");
  mkdirSync(blobs, { recursive: true });
  const layerTar = join(workDir, "layer.tar");
  execFileSync("tar", [
    "-C",
    rootfs,
    "--numeric-owner",
    "--owner=0",
    "--group=0",
    "--mtime=@0",
    "--sort=name",
    "-cf",
    layerTar,
    ".",
  ]);
  // sha256sum reads the layer as a stream: a Ray image's is ~300 MB.
  const layerDigest = execFileSync("sha256sum", [layerTar], { encoding: "utf8" }).split(" ")[0] as string;
  const layerSize = statSync(layerTar).size;
  renameSync(layerTar, join(blobs, layerDigest));
  const blob = (json: object): { digest: string; size: number } => {
    const text = JSON.stringify(json);
    const digest = sha256(text);
    writeFileSync(join(blobs, digest), text);
    return { digest: `sha256:${digest}`, size: Buffer.byteLength(text) };
  };
  const arch = process.arch === "arm64" ? "arm64" : "amd64";
  const manifests = images.map(({ name, cmd, env }) => {
    const config = blob({
      architecture: arch,
      os: "linux",
      config: { Env: env, Cmd: cmd, WorkingDir: "/" },
      rootfs: { type: "layers", diff_ids: [`sha256:${layerDigest}`] },
    });
    const manifest = blob({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
      layers: [
        {
          mediaType: "application/vnd.oci.image.layer.v1.tar",
          digest: `sha256:${layerDigest}`,
          size: layerSize,
        },
      ],
    });
    return {
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      ...manifest,
      platform: { architecture: arch, os: "linux" },
      annotations: { "io.containerd.image.name": name, "org.opencontainers.image.ref.name": name },
    };
  });
  writeFileSync(join(layout, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(join(layout, "index.json"), JSON.stringify({ schemaVersion: 2, manifests }));
  const archive = join(workDir, archiveName);
  execFileSync("tar", ["-C", layout, "-cf", archive, "."]);
  rmSync(rootfs, { recursive: true, force: true });
  rmSync(layout, { recursive: true, force: true });
  return archive;
}

/** Builds the archive in `workDir` (created, then left with only the archive); returns its path. */
export function buildImageArchive(workDir: string): string {
  const rootfs = join(workDir, "rootfs");
  mkdirSync(join(rootfs, "bin"), { recursive: true });
  for (const d of ["etc", "tmp", "proc", "sys", "dev", "root", "var/www"])
    mkdirSync(join(rootfs, d), { recursive: true });
  copyFileSync(BUSYBOX, join(rootfs, "bin/busybox"));
  const applets = execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" }).split("\n").filter(Boolean);
  for (const applet of applets) if (applet !== "busybox") symlinkSync("busybox", join(rootfs, "bin", applet));
  copyWithLibraries(SFTP_SERVER, rootfs);
  copyWithLibraries(VIM, rootfs);
  symlinkSync(VIM, join(rootfs, "bin/vim"));
  for (const entry of TERMINFO) {
    mkdirSync(dirname(join(rootfs, "lib/terminfo", entry)), { recursive: true });
    copyFileSync(join("/lib/terminfo", entry), join(rootfs, "lib/terminfo", entry));
  }
  writeFileSync(join(rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  writeFileSync(join(rootfs, "etc/group"), "root:x:0:\n");
  return writeOciArchive(rootfs, workDir, "images.tar", [
    { name: REAL_NODE_IMAGES.pause, cmd: ["/bin/sleep", "2147483647"], env: ["PATH=/bin"] },
    { name: REAL_NODE_IMAGES.busybox, cmd: ["/bin/sh"], env: ["PATH=/bin"] },
  ]);
}
