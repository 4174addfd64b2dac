// The images a real node needs, built here because no registry is reachable: one rootfs of
// Debian's static busybox (/bin/busybox from busybox-static, every applet a symlink to it) and
// OpenSSH's sftp-server with its shared libraries (for SFTP into pods through pods/exec), as two
// OCI images, the pod sandbox ("pause") and a busybox for test pods. Written as one OCI image
// layout archive that `ctr images import` reads (each manifest named by io.containerd.image.name).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Image names on every real node (pods use them with imagePullPolicy Never). */
export const REAL_NODE_IMAGES = {
  /** containerd's CRI sandbox_image: sleeps until killed (containerd stops sandboxes by SIGKILL). */
  pause: "rlark.local/pause:busybox",
  /**
   * busybox with every applet on PATH (sh, httpd, nc, tar, ...) and /usr/lib/openssh/sftp-server;
   * its default command is sh.
   */
  busybox: "rlark.local/busybox:1",
} as const;

export const BUSYBOX = "/bin/busybox";
export const SFTP_SERVER = "/usr/lib/openssh/sftp-server";

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

/** Builds the archive in `workDir` (created, then left with only the archive); returns its path. */
export function buildImageArchive(workDir: string): string {
  const rootfs = join(workDir, "rootfs");
  const layout = join(workDir, "layout");
  mkdirSync(join(rootfs, "bin"), { recursive: true });
  for (const d of ["etc", "tmp", "proc", "sys", "dev", "root", "var/www"])
    mkdirSync(join(rootfs, d), { recursive: true });
  copyFileSync(BUSYBOX, join(rootfs, "bin/busybox"));
  const applets = execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" }).split("\n").filter(Boolean);
  for (const applet of applets) if (applet !== "busybox") symlinkSync("busybox", join(rootfs, "bin", applet));
  copyWithLibraries(SFTP_SERVER, rootfs);
  writeFileSync(join(rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  writeFileSync(join(rootfs, "etc/group"), "root:x:0:\n");

  const blobs = join(layout, "blobs/sha256");
  mkdirSync(blobs, { recursive: true });
  const layerTar = join(workDir, "layer.tar");
  // fixed owner and mtime: the layer (and so the image IDs) is the same for the same busybox
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
  const layer = readFileSync(layerTar);
  const layerDigest = sha256(layer);
  writeFileSync(join(blobs, layerDigest), layer);
  const blob = (json: object): { digest: string; size: number } => {
    const text = JSON.stringify(json);
    const digest = sha256(text);
    writeFileSync(join(blobs, digest), text);
    return { digest: `sha256:${digest}`, size: Buffer.byteLength(text) };
  };
  const arch = process.arch === "arm64" ? "arm64" : "amd64";
  const manifests = Object.entries({
    [REAL_NODE_IMAGES.pause]: ["/bin/sleep", "2147483647"],
    [REAL_NODE_IMAGES.busybox]: ["/bin/sh"],
  }).map(([name, cmd]) => {
    const config = blob({
      architecture: arch,
      os: "linux",
      config: { Env: ["PATH=/bin"], Cmd: cmd, WorkingDir: "/" },
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
          size: layer.length,
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
  const archive = join(workDir, "images.tar");
  execFileSync("tar", ["-C", layout, "-cf", archive, "."]);
  rmSync(rootfs, { recursive: true, force: true });
  rmSync(layout, { recursive: true, force: true });
  rmSync(layerTar, { force: true });
  return archive;
}
