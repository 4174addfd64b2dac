import path from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import packageJson from "../../package.json" with { type: "json" };
import { usageError } from "./cli-error.ts";

export const DEVICE_WEBHOOK_HELP = `
Runs the embodied runtime's mutating admission webhook (docs/devices.md): every pod whose
containers request rlinf.io/device gets the devinit init container first (it requests the same
resource, has NET_ADMIN only, and runs \`rlark devinit\` to add a macvlan interface in the pod's
network namespace). Other pods are never changed. POST /mutate takes AdmissionReview v1;
GET /healthz answers ok.

The TLS serving certificate is issued for --server-name by a CA opened through RLark's PKI:
--ca-dir holds ca.crt and ca.key (the hub CA from a mounted Secret), or else a CA of the webhook's
own is made in --data-dir. With --webhook-config, the webhook keeps caBundle of that
MutatingWebhookConfiguration equal to this CA (at start and every minute), through --kubeconfig or
the in-cluster service account.

Example:
  rlark device-webhook --server-name rlark-device-webhook.rlark-system.svc \\
    --webhook-config rlark-device-webhook --data-dir /var/lib/rlark-webhook
`;

interface WebhookFlags {
  listen: string;
  serverName: string[];
  caDir?: string;
  dataDir: string;
  webhookConfig?: string;
  kubeconfig?: string;
  image: string;
  macvlanMaster: string;
  macvlanMode: string;
}

function hostPort(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match || port > 65535) throw new InvalidArgumentError(`"${value}" is not host:port`);
  return { host: (match[1] as string).replace(/^\[|\]$/g, ""), port };
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerDeviceWebhook(program: Command): void {
  program
    .command("device-webhook")
    .description("inject the devinit init container into pods that request rlinf.io/device")
    .option("--listen <host:port>", "where to serve HTTPS", "0.0.0.0:8443")
    .option("--server-name <name>", "a DNS name or IP of the serving certificate (repeatable)", collect, [])
    .option("--ca-dir <dir>", "a CA's ca.crt and ca.key (read-only) to issue the serving certificate")
    .option(
      "--data-dir <dir>",
      "where the webhook's own CA is kept when --ca-dir is not given",
      ".rlark-webhook",
    )
    .option("--webhook-config <name>", "the MutatingWebhookConfiguration whose caBundle to keep current")
    .option("--kubeconfig <file>", "with --webhook-config: the cluster (default: in-cluster credentials)")
    .option(
      "--image <image>",
      "the image of the devinit container (it runs iproute2's ip: rlark/sidecar has it)",
      `rlark/sidecar:${packageJson.version}`,
    )
    .option("--macvlan-master <ifname>", "the pod interface devinit's macvlan hangs off", "eth0")
    .option("--macvlan-mode <mode>", "macvlan mode: bridge, private, vepa, passthru, source", "bridge")
    .addHelpText("after", DEVICE_WEBHOOK_HELP)
    .action(async (flags: WebhookFlags) => {
      const { host, port } = hostPort(flags.listen);
      if (flags.serverName.length === 0) throw usageError("give at least one --server-name");
      const [
        { startDeviceWebhook, keepCaBundle },
        { openCertificateAuthority },
        { jsonLogger },
        { systemClock },
        { untilSignal },
      ] = await Promise.all([
        import("../device/index.ts"),
        import("../lib/pki/index.ts"),
        import("../lib/logger.ts"),
        import("../lib/clock.ts"),
        import("./until-signal.ts"),
      ]);
      const logger = jsonLogger("device-webhook");
      const ca = openCertificateAuthority({
        dataDir: path.resolve(flags.dataDir),
        ...(flags.caDir ? { caDir: path.resolve(flags.caDir) } : {}),
        commonName: "rlark device webhook CA",
      });
      const webhook = await startDeviceWebhook({
        host,
        port,
        ca,
        serverNames: flags.serverName,
        devinit: { image: flags.image, master: flags.macvlanMaster, mode: flags.macvlanMode },
        logger,
      });
      let stopBundle = () => {};
      if (flags.webhookConfig) {
        const { loadKubeConfig } = await import("../lib/kube-config.ts");
        const kubeConfig = loadKubeConfig(flags.kubeconfig);
        stopBundle = keepCaBundle({
          kubeConfig,
          name: flags.webhookConfig,
          caPem: webhook.caPem,
          intervalMs: 60_000,
          clock: systemClock,
          logger,
        });
      }
      logger.info("device webhook serving", { url: webhook.url });
      await untilSignal();
      stopBundle();
      await webhook.stop();
    });
}
