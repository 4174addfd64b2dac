import path from "node:path";
import { type Command, Option } from "commander";
import type { HubOptions } from "../hub/index.ts";
import { leaderElectionDefaults } from "../lib/leader-election.ts";
import { runAgentlessClusters } from "./agentless.ts";
import { parseDuration } from "./duration.ts";
import { addCommonHubFlags, type CommonHubFlags, hubOptionsFrom } from "./hub-options.ts";
import { untilSignal } from "./until-signal.ts";

export const HUB_HELP = `
Runs the hub: follows a git repository of manifests, validates each new revision whole and
applies it to its store (an invalid revision is refused and the last good one stays), runs
the Job, Workflow and Domain controllers, writes status back to the status branch, and
serves the read-only API on --http. Every /api route and /metrics need
"Authorization: Bearer <token>"; the admin token is in <data-dir>/admin-token (0600).

Examples:
  rlark hub --repo https://github.com/acme/fleet.git --branch main --path clusters/prod
  rlark hub --repo git@github.com:acme/fleet.git --git-ssh-key-file ~/.ssh/deploy_key \\
            --webhook-secret-file /etc/rlark/webhook-secret --interval 5m
  rlark hub --store kubernetes --namespace rlark-system --repo https://github.com/acme/fleet.git

With --store kubernetes every object is a custom resource on the cluster of --kubeconfig (or
in-cluster credentials): install the CRDs first with \`rlark crds | kubectl apply --server-side -f -\`.
Several hubs may then run at once: one leads by the Lease rlark-hub in --namespace and runs the
controllers, the git source, status commits, code-host feedback and the agent tunnel; the others
serve the read API and the dashboard and answer 503 on /readyz until they lead (docs/ha.md).

Clusters with spec.access: kubeconfig have no agent: the leading hub opens their sealed
kubeconfig with its keys (<data-dir>/seal) and drives them itself, which needs network reach to
their API servers (docs/clusters.md).
`;

interface StoreFlags {
  store: "sqlite" | "kubernetes";
  kubeconfig?: string;
  namespace: string;
  crdGroup?: string;
  leaseName: string;
  leaderElectLeaseDuration: number;
  leaderElectRenewDeadline: number;
  leaderElectRetryPeriod: number;
}

function addStoreFlags(command: Command): Command {
  const duration = (flag: string, help: string, value: number, shown: string) =>
    new Option(flag, help).argParser(parseDuration).default(value, shown);
  return command
    .addOption(
      new Option("--store <backend>", "where objects are kept")
        .choices(["sqlite", "kubernetes"])
        .default("sqlite"),
    )
    .option(
      "--kubeconfig <file>",
      "kubernetes store: the apiserver (default in-cluster, $KUBECONFIG, ~/.kube/config)",
    )
    .option("--namespace <name>", "kubernetes store: namespace of the leader Lease", "rlark-system")
    .option(
      "--crd-group <group>",
      "kubernetes store: the CRDs' group when not rlinf.io (several installations on one apiserver)",
    )
    .option("--lease-name <name>", "kubernetes store: the leader Lease", "rlark-hub")
    .addOption(
      duration(
        "--leader-elect-lease-duration <duration>",
        "how long an unrenewed lease stays its holder's",
        leaderElectionDefaults.leaseMs,
        `${leaderElectionDefaults.leaseMs / 1000}s`,
      ),
    )
    .addOption(
      duration(
        "--leader-elect-renew-deadline <duration>",
        "the leader stops leading when it could not renew for this long",
        leaderElectionDefaults.renewDeadlineMs,
        `${leaderElectionDefaults.renewDeadlineMs / 1000}s`,
      ),
    )
    .addOption(
      duration(
        "--leader-elect-retry-period <duration>",
        "how often candidates try to acquire and the leader renews",
        leaderElectionDefaults.retryMs,
        `${leaderElectionDefaults.retryMs / 1000}s`,
      ),
    );
}

function storeOptions(flags: StoreFlags): Pick<HubOptions, "store" | "leaderElection"> {
  if (flags.store === "sqlite") return {};
  return {
    store: {
      backend: "kubernetes",
      namespace: flags.namespace,
      ...(flags.kubeconfig ? { kubeconfig: path.resolve(flags.kubeconfig) } : {}),
      ...(flags.crdGroup ? { servedGroup: flags.crdGroup } : {}),
    },
    leaderElection: {
      leaseName: flags.leaseName,
      leaseMs: flags.leaderElectLeaseDuration,
      renewDeadlineMs: flags.leaderElectRenewDeadline,
      retryMs: flags.leaderElectRetryPeriod,
    },
  };
}

const HUB_DEFAULTS = { interval: "60s", ssh: "0.0.0.0:2222" };

export function registerHub(program: Command): void {
  const command = program
    .command("hub")
    .description("run the hub: git source, controllers, status feedback and the API")
    .addHelpText("after", HUB_HELP);
  addStoreFlags(addCommonHubFlags(command, HUB_DEFAULTS)).action(
    async (flags: CommonHubFlags & StoreFlags) => {
      if (!flags.repo) {
        command.error("error: --repo is required (use `rlark up` for a playground repository)", {
          exitCode: 2,
        });
      }
      if (
        !(
          flags.leaderElectLeaseDuration > flags.leaderElectRenewDeadline &&
          flags.leaderElectRenewDeadline > flags.leaderElectRetryPeriod
        )
      ) {
        command.error(
          "error: leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period",
          { exitCode: 2 },
        );
      }
      const options = { ...(await hubOptionsFrom(flags, { intervalMs: 60_000 })), ...storeOptions(flags) };
      const [{ startHub }, { jsonLogger }] = await Promise.all([
        import("../hub/index.ts"),
        import("../lib/logger.ts"),
      ]);
      const hub = await startHub(options);
      const agentless = await runAgentlessClusters(hub, options.dataDir, jsonLogger("agentless"));
      await untilSignal();
      await agentless.stop();
      await hub.stop();
    },
  );
}
