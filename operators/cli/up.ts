import path from "node:path";
import type { Command } from "commander";
import { runAgentlessClusters } from "./agentless.ts";
import { usageError } from "./cli-error.ts";
import { addCommonHubFlags, type CommonHubFlags, hubOptionsFrom } from "./hub-options.ts";
import { untilSignal } from "./until-signal.ts";

/** The Cluster the local process agent serves; examples/clusters/local.yaml declares it. */
const LOCAL_CLUSTER = "local";

export const UP_HELP = `
The embedded default: the hub, a local process-runtime agent (cluster "local") and the
dashboard, in one process. Without --repo it creates (or reuses) a playground git repository
at <data-dir>/repo seeded from examples/ and checks it every 2 s: edit a manifest there,
commit, and watch the change happen.

Ctrl-C stops the hub and the agent; the processes of Deployment-kind Raw tasks keep running for
the next rlark up to adopt (it says how many). rlark up --clean stops them, also when the data
dir was removed, and removes <data-dir>/agent/runtime (their records, logs and work dirs).

Examples:
  rlark up                                  # playground at .rlark/repo
  rlark up --repo ~/src/fleet --interval 5s # your own repository
  rlark up --clean                          # stop what an earlier rlark up left running
`;

// Loopback SSH: the playground's agent runs in this process; remote agents need --ssh 0.0.0.0:2222.
const UP_DEFAULTS = { interval: "2s", ssh: "127.0.0.1:2222" };

export function registerUp(program: Command): void {
  const command = program
    .command("up")
    .description("run the hub, a local agent and the dashboard on a playground repository")
    .addHelpText("after", UP_HELP);
  command.option(
    "--clean",
    "stop the pods' processes an earlier rlark up on --data-dir left running (also when the data dir was removed), remove their state, and exit",
  );
  addCommonHubFlags(command, UP_DEFAULTS).action(async (flags: CommonHubFlags & { clean?: boolean }) => {
    if (flags.clean) return clean(flags.dataDir);
    const options = await hubOptionsFrom(flags, { intervalMs: 2_000 });
    const [
      { localPodProcesses, startLocalAgent },
      { ensurePlayground, startHub },
      { jsonLogger },
      { LOGIN_LINK_TTL_MS },
    ] = await Promise.all([
      import("../agent/index.ts"),
      import("../hub/index.ts"),
      import("../lib/logger.ts"),
      import("../dashboard/index.ts"),
    ]);
    let playground: string | undefined;
    if (!options.repo) {
      const created = await ensurePlayground(options.dataDir, options.branch);
      playground = created.dir;
      options.repo = created.dir;
    }
    const logger = jsonLogger("up");
    const hub = await startHub({ ...options, logger });
    const agent = await startLocalAgent({
      cluster: LOCAL_CLUSTER,
      dataDir: options.dataDir,
      hub,
      createToken: async (cluster) =>
        (await hub.pki.enrollment.createToken({ cluster, ttlMs: 10 * 60_000 })).token,
      logger,
    });
    const agentless = await runAgentlessClusters(hub, options.dataDir, logger);
    const out = process.stdout;
    out.write(`\nRLark is up.\n`);
    if (playground) {
      out.write(`  playground repository: ${playground}\n`);
      out.write(
        `    edit a manifest there and commit (git -C ${playground} commit -am "..."); the hub checks every ${(options.intervalMs ?? 2_000) / 1000}s\n`,
      );
    } else out.write(`  repository: ${hub.source?.repository.url} (branch ${options.branch})\n`);
    if (hub.dashboard)
      // A single-use code, never the admin token: this line stays in scrollback and screenshots.
      out.write(
        `  dashboard (admin login link, works once within ${LOGIN_LINK_TTL_MS / 60_000} minutes): ${hub.dashboard.loginUrl(hub.url)}\n`,
      );
    out.write(`  API: ${hub.url}/api/v1/rlinf.io/v1alpha1/jobs\n`);
    out.write(
      `    curl -H "Authorization: Bearer $(cat ${options.dataDir}/admin-token)" ${hub.url}/api/v1/source\n`,
    );
    out.write(`  status: rlark status --data-dir ${options.dataDir} --hub ${hub.url}\n`);
    out.write(
      agent
        ? `  local agent: cluster "${LOCAL_CLUSTER}" (process runtime) runs Raw tasks on this machine\n`
        : hub.source?.watcher.status().lastAppliedRevision
          ? `  no Cluster "${LOCAL_CLUSTER}" in the repository: no local agent started\n`
          : `  the repository is not loaded yet (see rlark status): no local agent started; restart rlark up once it is\n`,
    );
    out.write(`  stop with Ctrl-C\n\n`);
    await untilSignal();
    await agent?.stop();
    await agentless.stop();
    await hub.stop();
    // They wait for adoption, and would wait forever if nobody started rlark up here again.
    const left = localPodProcesses(options.dataDir);
    if (left > 0)
      out.write(
        `${processes(left)} keep${left === 1 ? "s" : ""} running for the next rlark up to adopt; stop them with: rlark up --clean --data-dir ${options.dataDir}\n`,
      );
  });
}

const processes = (n: number) => `${n} pod process${n === 1 ? "" : "es"}`;

async function clean(dataDir: string): Promise<void> {
  const [{ cleanLocalAgent }, { jsonLogger }] = await Promise.all([
    import("../agent/index.ts"),
    import("../lib/logger.ts"),
  ]);
  const dir = path.resolve(dataDir);
  let stopped: number;
  try {
    stopped = await cleanLocalAgent(dir, jsonLogger("up"));
  } catch (error) {
    throw usageError(`--clean: ${(error as Error).message}`);
  }
  process.stdout.write(
    stopped > 0
      ? `stopped ${processes(stopped)} and removed ${path.join(dir, "agent", "runtime")}\n`
      : `no pod processes of ${dir} were running; removed ${path.join(dir, "agent", "runtime")}\n`,
  );
}
