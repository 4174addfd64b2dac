// What the tests on real nodes (tests/e2e/real-nodes/) share beyond the fleet itself: the rlark
// images, built by hack/images/build (cached in ~/.cache/rlark/images) and imported into every
// real node's containerd of the shared real-node fleet; and exec into a pod's container through
// the API server's pods/exec, with stdout, stderr and the exit status.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Exec, type KubeConfig, type V1Status } from "@kubernetes/client-node";
import { REAL_NODE_IMAGES } from "../../hack/kube/images.ts";
import { repoRoot } from "../../hack/kube/paths.ts";
import { REAL_NODE_LABEL, type RealNodeRecord } from "../../hack/kube/real-nodes.ts";
import { realFleetDir, within } from "./fleet.ts";

const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
  .version;

/**
 * A Job's task (YAML, as an item of `spec.tasks`) whose one pod runs busybox on a real node: the
 * image is imported there, never pulled (unless `image` says otherwise). `container` is the rest of the container (its command,
 * at the container's indentation) and `pod` the rest of the pod spec (its volumes), each ending in
 * a newline.
 */
export function realBusyboxTaskYaml(
  name: string,
  namespace: string,
  container: string,
  pod = "",
  /** Another image or pull policy (image pre-pull's tests: IfNotPresent is pulled ahead, Never is not). */
  image: { image?: string; pullPolicy?: "Never" | "IfNotPresent" } = {},
): string {
  return `    - name: ${name}
      role: Actor
      agentType: Kubernetes
      kubernetes:
        workload:
          kind: Deployment
          replicas: 1
          template:
            namespace: ${namespace}
            spec:
              nodeSelector: { ${REAL_NODE_LABEL}: "true" }
              containers:
                - name: main
                  image: ${image.image ?? REAL_NODE_IMAGES.busybox}
                  imagePullPolicy: ${image.pullPolicy ?? "Never"}
${container}${pod}`;
}

/**
 * A Ray task (`annotations` carry its ray-role) of image `image` on the real node of the Cluster
 * labelled `region: <cluster>`: the tests' stand-in and the demo's real Ray use the same shape.
 */
export function realRayTaskYaml(task: {
  name: string;
  cluster: string;
  namespace: string;
  annotations: Record<string, string>;
  image: string;
  command?: string[];
  /** Container fields after imagePullPolicy (e.g. an env: block), indented as a container's. */
  container?: string;
  terminationGracePeriodSeconds?: number;
}): string {
  return `    - name: ${task.name}
      role: Actor
      agentType: Kubernetes
      clusterSelector: { matchLabels: { region: ${task.cluster} } }
      annotations: ${JSON.stringify(task.annotations)}
      kubernetes:
        workload:
          kind: Deployment
          replicas: 1
          template:
            namespace: ${task.namespace}
            spec:
              nodeSelector: { ${REAL_NODE_LABEL}: "true" }
              terminationGracePeriodSeconds: ${task.terminationGracePeriodSeconds ?? 1}
              containers:
                - name: main
                  image: ${task.image}
                  imagePullPolicy: Never
${task.container ?? ""}${task.command ? `                  command: ${JSON.stringify(task.command)}\n` : ""}`;
}

/** The names pods use (the agent's defaults), as containerd's CRI sees them. */
export const RLARK_IMAGE = `rlark/rlark:${version}`;
export const SIDECAR_IMAGE = `rlark/sidecar:${version}`;

/** The OCI archives of rlark/rlark and rlark/sidecar; built (or kept, when unchanged) first. */
export function rlarkImageArchives(): string[] {
  const out = execFileSync("bash", [join(repoRoot, "hack/images/build")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const archive = (name: string): string => {
    const m = new RegExp(`^(\\S+/${name}-${version.replace(/\./g, "\\.")}\\.oci\\.tar)\\t`, "m").exec(out);
    if (!m?.[1]) throw new Error(`hack/images/build named no ${name} archive:\n${out}`);
    return m[1];
  };
  return [archive("rlark"), archive("rlark-sidecar")];
}

/** The real nodes of the shared real-node fleet, as its state.json records them. */
export function realNodeRecords(env: NodeJS.ProcessEnv = process.env): RealNodeRecord[] {
  const state = JSON.parse(readFileSync(join(realFleetDir(env), "state.json"), "utf8")) as {
    realNodeRecords?: RealNodeRecord[];
  };
  return state.realNodeRecords ?? [];
}

/**
 * Imports the archives into every real node's containerd (the CRI's k8s.io namespace), under the
 * name a pod spec's `image: rlark/rlark:<version>` resolves to (docker.io/...): buildah names the
 * archive's manifest by its bare reference, which `ctr import` keeps as it is. Unpacking is
 * skipped by containerd for layers it has.
 */
export function importIntoRealNodes(archives: string[], images: string[]): void {
  for (const node of realNodeRecords()) {
    const ctr = (args: string[]) => {
      const r = spawnSync("ctr", ["--address", node.socket, "-n", "k8s.io", ...args], { encoding: "utf8" });
      if (r.status !== 0)
        throw new Error(`ctr ${args.join(" ")} on ${node.cluster}/${node.name}: ${r.stderr}`);
      return r.stdout;
    };
    for (const archive of archives) ctr(["images", "import", "--snapshotter", "native", archive]);
    const listed = ctr(["images", "list", "-q"]).split("\n");
    for (const image of images) {
      if (!listed.includes(image)) throw new Error(`${node.cluster}/${node.name}: no ${image} after import`);
      // --force: a newer build of the same tag moves the name
      ctr(["images", "tag", "--force", image, `docker.io/${image}`]);
    }
  }
}

function collect(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** Runs `command` in `container` of the pod through pods/exec; bounded by `timeoutMs`. */
export async function podExec(
  kc: KubeConfig,
  pod: { namespace: string; name: string; container: string },
  command: string[],
  timeoutMs = 60_000,
): Promise<ExecResult> {
  const out = collect();
  const err = collect();
  const status = await within(
    `exec ${command.join(" ")} in ${pod.name}`,
    new Promise<V1Status>((resolve, reject) => {
      new Exec(kc)
        .exec(pod.namespace, pod.name, pod.container, command, out.stream, err.stream, null, false, resolve)
        .catch(reject);
    }),
    timeoutMs,
  );
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = status.status === "Success" ? 0 : Number(cause?.message ?? -1);
  return { stdout: out.text(), stderr: err.text(), code };
}
