import { hostname } from "node:os";
import path from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { Runtime } from "../agent/runtimes/types.ts";
import { untilSignal } from "./until-signal.ts";

export const AGENT_HELP = `
Runs an agent: dials the hub's SSH endpoint (no inbound port is opened here), receives the
Tasks placed on its cluster, runs them, and reports Nodes, Pods and Task status back.

On first start it enrolls with a one-time token from \`rlark token create --cluster <name>\`
on the hub, pinning the hub by its CA fingerprint (--ca-hash); the key and certificate are kept
in --state-dir (0600) and reused, so later starts need neither flag.

Runtimes:
  process     Raw tasks as local processes; this machine is the cluster's one node.
  kubernetes  Kubernetes tasks as Deployments, StatefulSets, DaemonSets and Jobs on the cluster
              of --kubeconfig (or the in-cluster service account), by server-side apply with the
              field manager rlark-agent; git's Node overlays are patched onto its nodes; the
              identity is kept in the Secret rlark-system/rlark-agent-identity. See
              docs/kubernetes-runtime.md and fleet/agent/ for running it inside the cluster.

Examples:
  rlark agent --hub hub.example.com:2222 --token rlt.… --ca-hash sha256:… --state-dir /var/lib/rlark
  rlark agent --hub hub.example.com:2222 --state-dir /var/lib/rlark --label rlark.io/city=shanghai
`;

interface AgentFlags {
  hub: string;
  token?: string;
  caHash?: string;
  stateDir: string;
  runtime: "process" | "kubernetes";
  kubeconfig?: string;
  sidecarImage?: string;
  sidecarArg: string[];
  nodeName: string;
  label: Record<string, string>;
}

function collectLabel(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new InvalidArgumentError(`"${value}" is not key=value`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function registerAgent(program: Command): void {
  program
    .command("agent")
    .description("run an agent that serves one cluster or machine for the hub")
    .requiredOption("--hub <host:port>", "the hub's SSH endpoint")
    .option("--token <token>", "one-time bootstrap token (first start only)")
    .option("--ca-hash <sha256:hex>", "the hub CA's fingerprint to pin (first start only)")
    .option("--state-dir <dir>", "where the agent keeps its credentials and process state", ".rlark-agent")
    .addOption(
      new Option("--runtime <runtime>", "how tasks run")
        .choices(["process", "kubernetes"])
        .default("process"),
    )
    .option(
      "--kubeconfig <file>",
      "kubernetes runtime: the cluster to serve (default: in-cluster credentials)",
    )
    .option(
      "--sidecar-image <image>",
      "kubernetes runtime: the network sidecar for pods of Tasks with a domain",
    )
    .option(
      "--sidecar-arg <arg>",
      "kubernetes runtime: an argument of the sidecar (repeatable)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option("--node-name <name>", "the node name this machine reports", hostname())
    .option("--label <key=value>", "a label on the reported node (repeatable)", collectLabel, {})
    .addHelpText("after", AGENT_HELP)
    .action(async (flags: AgentFlags) => {
      // Loaded here, not at the top: every `rlark` invocation would otherwise pay for them.
      const [{ startAgent }, { ProcessRuntime }, { jsonLogger }, { fileCredentialStore }] = await Promise.all(
        [
          import("../agent/agent.ts"),
          import("../agent/runtimes/process/index.ts"),
          import("../hub/logger.ts"),
          import("../lib/tunnel/index.ts"),
        ],
      );
      const logger = jsonLogger("agent");
      const stateDir = path.resolve(flags.stateDir);
      let kubeApiTarget: { host: string; port: number } | undefined;
      let runtime: Runtime;
      let credentials = fileCredentialStore(path.join(stateDir, "credentials.json"));
      if (flags.runtime === "kubernetes") {
        const [{ KubeConfig }, { KubernetesRuntime }, { secretCredentialStore }] = await Promise.all([
          import("@kubernetes/client-node"),
          import("../agent/runtimes/kubernetes/index.ts"),
          import("../agent/runtimes/kubernetes/credential-secret.ts"),
        ]);
        const kubeConfig = new KubeConfig();
        if (flags.kubeconfig) kubeConfig.loadFromFile(flags.kubeconfig);
        else kubeConfig.loadFromCluster();
        const server = new URL(kubeConfig.getCurrentCluster()?.server ?? "https://kubernetes.default.svc");
        kubeApiTarget = { host: server.hostname, port: Number(server.port || 443) };
        runtime = await KubernetesRuntime.start({
          kubeConfig,
          logger,
          ...(flags.sidecarImage ? { sidecar: { image: flags.sidecarImage, args: flags.sidecarArg } } : {}),
        });
        // In a cluster the identity lives in a Secret, so a rescheduled agent pod stays enrolled.
        credentials = secretCredentialStore({ kubeConfig });
      } else {
        runtime = await ProcessRuntime.open({
          stateDir: path.join(stateDir, "runtime"),
          nodeName: flags.nodeName,
          nodeLabels: flags.label,
          logger,
        });
      }
      const agent = await startAgent({
        hub: flags.hub,
        credentials,
        ...(flags.token ? { token: flags.token } : {}),
        ...(flags.caHash ? { caHash: flags.caHash } : {}),
        runtime,
        runtimeKind: flags.runtime,
        ...(kubeApiTarget ? { kubeApiTarget } : {}),
        logger,
      });
      logger.info("agent started", { cluster: agent.cluster, hub: flags.hub });
      await untilSignal();
      await agent.stop();
    });
}
