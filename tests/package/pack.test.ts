// The npm package as a user gets it: `npm pack` (which builds dist/), installed outside the
// checkout globally and as a devDependency, run from other folders on Node 24 and, when it is
// in the npm cache, Node 22; then the GitHub Action's and the GitLab template's scripts, run with
// bash and sh in a temporary repository with a fake CI environment, against that tarball.
// Installs use the warm npm cache (--prefer-offline) so the test does not hammer the registry.
import {
  type ExecFileOptions,
  execFile,
  type SpawnOptions,
  type SpawnSyncOptions,
  spawn,
  spawnSync,
} from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { parse } from "yaml";
import { startLongRunning } from "../helpers/long-running.ts";
import { waitFor } from "../helpers/wait-for.ts";

const root = path.resolve(import.meta.dirname, "../..");
const version = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string })
  .version;
const work = mkdtempSync(path.join(tmpdir(), "rlark-pack-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";
/** The environment of a machine with only `node` (the given one) and git: no checkout tools. */
function env(node: string, ...bins: string[]): NodeJS.ProcessEnv {
  return {
    HOME: process.env.HOME,
    PATH: [...bins, path.dirname(node), SYSTEM_PATH].join(":"),
    npm_config_prefer_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false",
  };
}

function run(command: string, args: string[], options: SpawnSyncOptions) {
  const result = spawnSync(command, args, { encoding: "utf8", ...options });
  return { status: result.status, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** run(), without blocking the event loop: for steps that run while others do. */
function runAsync(command: string, args: string[], options: SpawnOptions) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, stdout, stderr }));
  });
}

function mustRun(command: string, args: string[], options: SpawnSyncOptions): string {
  const result = run(command, args, options);
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(" ")}: exit ${result.status}\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

async function mustRunAsync(command: string, args: string[], options: ExecFileOptions): Promise<void> {
  try {
    await promisify(execFile)(command, args, options);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")}: ${String(error)}\n${stdout}${stderr}`);
  }
}

const node24 = process.execPath;
// Node 22 from the npm cache only: `npm test` puts it there first (hack/test.ts); a run of this
// file alone needs `npx -y -p node@22 node --version` once.
const node22 = run("npx", ["--offline", "--yes", "--package", "node@22", "node", "-p", "process.execPath"], {
  cwd: work,
  env: env(node24),
}).stdout.trim();
if (!node22) throw new Error("node@22 is not in the npm cache: run `npx -y -p node@22 node --version` once");

const tarball = path.join(work, `rlark-${version}.tgz`);
mustRun("npm", ["pack", "--silent", "--pack-destination", work], { cwd: root, env: env(node24) });

/** A GitOps repository of the user's: the package's examples, committed on main. */
function userRepository(name: string): string {
  const dir = path.join(work, name);
  cpSync(path.join(root, "examples"), dir, { recursive: true });
  rmSync(path.join(dir, "invalid"), { recursive: true });
  const git = (...args: string[]) => mustRun("git", args, { cwd: dir });
  git("init", "--quiet", "--initial-branch", "main");
  git("-c", "user.name=u", "-c", "user.email=u@example.com", "add", "--all");
  git("-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "--quiet", "-m", "fleet");
  return dir;
}

// Both installs at once: each mostly waits on the disk and the (shared) CPUs.
const prefix = path.join(work, "global");
const devRepo = userRepository("dev-dependency");
writeFileSync(path.join(devRepo, "package.json"), `${JSON.stringify({ name: "fleet", private: true })}\n`);
t.before(() =>
  Promise.all([
    mustRunAsync("npm", ["install", "--global", "--prefix", prefix, tarball], {
      cwd: work,
      env: env(node24),
    }),
    mustRunAsync("npm", ["install", "--save-dev", tarball], { cwd: devRepo, env: env(node24) }),
  ]),
);
const installed = path.join(prefix, "lib", "node_modules", "rlark");

t.test("the tarball holds the built CLI, the schemas and what the CLI reads at run time", async (t) => {
  const files = mustRun("tar", ["tzf", tarball], {}).split("\n");
  for (const file of [
    "package/bin/rlark.js",
    "package/bin/rosctr.js",
    "package/bin/camctr.js",
    "package/dist/cli/main.js",
    "package/dist/device/cli/rosctr-main.js",
    "package/dist/device/cli/camctr-main.js",
    "package/dist/device/proto/camera.proto",
    "package/dist/device/proto/ros.proto",
    "package/dist/api/generated/validators.js",
    "package/dist/agent/runtimes/process/log-writer-main.js",
    "package/dist/dashboard/web/index.html",
    "package/dist/dashboard/web/main.mts",
    "package/schemas/job.schema.json",
    "package/schemas/crds/jobs.rlinf.io.yaml",
    "package/examples/.rlarkignore",
    "package/examples/jobs/cartpole-local.yaml",
    "package/fleet/addons/embodied-runtime/0.1.0/values.schema.json",
    "package/fleet/addons/embodied-runtime/0.1.0/manifests/20-device-plugin.yaml",
    "package/dist/device/plugin/api.proto",
  ])
    t.ok(files.includes(file), file);
  t.same(
    files.filter((f) => f.endsWith(".ts")),
    [],
    "no TypeScript: Node does not strip types under node_modules",
  );
});

for (const [name, node] of [
  ["24", node24],
  ["22", node22],
] as const) {
  t.test(`npm install -g: rlark runs from any folder on Node ${name}`, async (t) => {
    t.match(mustRun(node, ["--version"], {}), new RegExp(`^v${name}\\.`));
    const repo = userRepository(`global-${name}`);
    const rlark = (...args: string[]) =>
      run("rlark", args, { cwd: repo, env: env(node, path.join(prefix, "bin")) });

    const printed = rlark("--version");
    t.equal(printed.stdout, `${version}\n`, "--version is the package's version");

    const valid = rlark("validate", ".");
    t.equal(valid.status, 0, valid.stderr);
    t.match(valid.stdout, /^\d+ documents valid\n$/);
    t.equal(valid.stderr, "", "no warnings on stderr");

    cpSync(path.join(root, "examples/invalid/schema-enum.yaml"), path.join(repo, "jobs/typo.yaml"));
    const invalid = rlark("validate", ".");
    t.equal(invalid.status, 1);
    t.match(invalid.stdout, "error: jobs/typo.yaml:14:17 Job typo-kind");
    rmSync(path.join(repo, "jobs/typo.yaml"));

    const plan = rlark("plan");
    t.equal(plan.status, 0, plan.stderr);
    t.match(plan.stdout, /against an empty state: \d+ to create/);
    t.equal(plan.stderr, "", "no warnings on stderr (Node 22 calls node:sqlite experimental)");

    // The CLIs the device plugin mounts into pods: the proto loads from dist/ (a socket nobody
    // answers on gets past the client's construction to the connection).
    const stale = path.join(repo, "stale.sock");
    run(
      node,
      [
        "-e",
        `require("node:net").createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, "SIGKILL"))`,
      ],
      {},
    );
    const camctr = run("camctr", ["status"], {
      cwd: repo,
      env: { ...env(node, path.join(prefix, "bin")), RLARK_CAMERA_SOCKET: stale },
    });
    t.equal(camctr.status, 1);
    t.match(camctr.stderr, `camctr: the camera controller at ${stale} does not answer`);
    t.match(
      run("rosctr", ["--help"], { cwd: repo, env: env(node, path.join(prefix, "bin")) }).stdout,
      /^Usage: rosctr /,
    );

    const up = rlark("up", "--help");
    t.equal(up.status, 0);
    t.match(up.stdout, /Usage: rlark up/);

    const crds = rlark("crds", "Job");
    t.equal(crds.status, 0, crds.stderr);
    const committed = readFileSync(path.join(installed, "schemas/crds/jobs.rlinf.io.yaml"), "utf8");
    t.equal(crds.stdout, committed.replace(/^#.*\n/, ""), "the CRD the package ships");
  });
}

const oldNode = "/usr/bin/node";
const oldVersion = existsSync(oldNode) ? mustRun(oldNode, ["--version"], {}).trim() : "";
t.test(
  "on an older Node, rlark says which it needs",
  { skip: !/^v(1\d|20|21)\./.test(oldVersion) && "no Node older than 22 at /usr/bin/node" },
  async (t) => {
    const old = run("rlark", ["--version"], { cwd: work, env: env(oldNode, path.join(prefix, "bin")) });
    t.equal(old.status, 1);
    t.equal(old.stderr, `rlark: needs Node.js 22.13 or later (22 or 24 LTS); this is ${oldVersion}\n`);
  },
);

for (const [name, node] of [
  ["24", node24],
  ["22", node22],
] as const)
  t.test(
    `the installed rlark up seeds the playground, serves the dashboard and runs the example Job on Node ${name}`,
    async (t) => {
      const dataDir = path.join(work, `up-${name}`);
      const up = startLongRunning(
        t,
        "rlark",
        ["up", "--data-dir", dataDir, "--http", "127.0.0.1:0", "--ssh", "127.0.0.1:0"],
        { cwd: work, env: env(node, path.join(prefix, "bin")) },
      );
      const hub = await waitFor(
        "rlark up to print its address",
        () => /API: (http:\/\/[^/\s]+)/.exec(up.stdout())?.[1],
        {
          attempts: 1200,
          everyMs: 50,
        },
      );
      const token = readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();

      const index = await (await fetch(`${hub}/`)).text();
      const script = /src="(\/assets\/[0-9a-f]+\/main\.mts)"/.exec(index)?.[1];
      t.ok(script, "the dashboard page links its scripts");
      const asset = await fetch(`${hub}${script}`);
      t.equal(asset.status, 200);
      t.match(asset.headers.get("content-type"), /text\/javascript/);

      const phase = async () => {
        const response = await fetch(`${hub}/api/v1/rlinf.io/v1alpha1/jobs/cartpole-local`, {
          headers: { authorization: `Bearer ${token}` },
        });
        return response.ok
          ? ((await response.json()) as { status?: { phase?: string } }).status?.phase
          : undefined;
      };
      await waitFor(
        "cartpole-local Succeeded (the process runtime's log writer is found)",
        async () => (await phase()) === "Succeeded",
        {
          attempts: 2400,
          everyMs: 50,
        },
      );
      const log = readFileSync(
        path.join(dataDir, "agent/runtime/pods/agent-local_cartpole-local-train-0/output.log"),
        "utf8",
      );
      t.match(log, /done: best return \d+/, "the task's output reached its log (the log writer ran)");
      up.kill("SIGINT");
      t.equal(await up.exited, 0);
    },
  );

t.test(
  "as a devDependency, `npx rlark validate --format github .` works in the user's repository",
  async (t) => {
    const repo = devRepo;
    const manifest = JSON.parse(readFileSync(path.join(repo, "package.json"), "utf8"));
    t.ok(manifest.devDependencies.rlark, "saved as a devDependency");
    cpSync(path.join(root, "examples/invalid/schema-enum.yaml"), path.join(repo, "jobs/typo.yaml"));
    const validate = run("npx", ["rlark", "validate", "--format", "github", "."], {
      cwd: repo,
      env: env(node24),
    });
    t.equal(validate.status, 1);
    t.match(validate.stdout, /^::error file=jobs\/typo\.yaml,line=14,col=17,/m);
  },
);

/** A user's repository with a pushed main and a pull-request branch `change`. */
function pullRequest(name: string): { repo: string; commit: (file: string, from: string) => void } {
  const origin = path.join(work, `${name}-origin.git`);
  mustRun("git", ["init", "--quiet", "--bare", "--initial-branch", "main", origin], {});
  const repo = userRepository(name);
  const git = (...args: string[]) =>
    mustRun("git", ["-c", "user.name=u", "-c", "user.email=u@example.com", ...args], { cwd: repo });
  git("remote", "add", "origin", origin);
  git("push", "--quiet", "origin", "main");
  git("checkout", "--quiet", "-b", "change");
  return {
    repo,
    commit: (file, from) => {
      mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
      cpSync(from, path.join(repo, file));
      git("add", "--all");
      git("commit", "--quiet", "-m", `add ${file}`);
    },
  };
}

interface ActionStep {
  name?: string;
  id?: string;
  if?: string;
  uses?: string;
  run?: string;
  shell?: string;
  env?: Record<string, string>;
}

const action = parse(readFileSync(path.join(root, ".github/actions/rlark/action.yml"), "utf8")) as {
  inputs: Record<string, { default?: string }>;
  runs: { using: string; steps: ActionStep[] };
};

/**
 * Runs the composite action's `run:` steps as the runner does (bash -e -o pipefail, inputs
 * through env, GITHUB_PATH and GITHUB_OUTPUT honoured, later steps skipped after a failure);
 * `uses:` steps (setup-node) are skipped: the test's own node stands in.
 */
async function runAction(
  repo: string,
  inputs: Record<string, string>,
  rerun?: { temp: string; from: string },
) {
  const temp = rerun?.temp ?? mkdtempSync(path.join(work, "runner-"));
  const value = (name: string) => inputs[name] ?? action.inputs[name]?.default ?? "";
  const expand = (text: string) =>
    text.replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, expr: string) => {
      if (expr === "runner.temp") return temp;
      if (expr.startsWith("inputs.")) return value(expr.slice("inputs.".length));
      throw new Error(`the test does not know ${expr}`);
    });
  const condition = (expr: string | undefined) => {
    if (!expr) return true;
    const match = /^inputs\.([\w-]+) (==|!=) '([^']*)'$/.exec(expr.trim());
    if (!match) throw new Error(`the test does not know the condition ${expr}`);
    return (value(match[1] as string) === match[3]) === (match[2] === "==");
  };
  const files = {
    GITHUB_PATH: path.join(temp, "path"),
    GITHUB_STEP_SUMMARY: path.join(temp, "summary.md"),
    GITHUB_EVENT_PATH: path.join(temp, "event.json"),
  };
  if (!rerun) writeFileSync(files.GITHUB_PATH, "");
  writeFileSync(files.GITHUB_STEP_SUMMARY, "");
  writeFileSync(
    files.GITHUB_EVENT_PATH,
    JSON.stringify({ pull_request: { number: 7, base: { ref: "main" }, head: { ref: "change" } } }),
  );
  const outputs: Record<string, string> = {};
  let stdout = "";
  let status = 0;
  const ran: string[] = [];
  let skipping = rerun !== undefined;
  for (const [index, step] of action.runs.steps.entries()) {
    if (skipping && step.name !== rerun?.from) continue;
    skipping = false;
    if (!condition(step.if)) continue;
    if (step.uses) continue;
    const output = path.join(temp, `output-${index}`);
    writeFileSync(output, "");
    const script = path.join(temp, `step-${index}.sh`);
    writeFileSync(script, step.run ?? "");
    const extraPath = readFileSync(files.GITHUB_PATH, "utf8").split("\n").filter(Boolean).reverse();
    const stepEnv = {
      ...env(node24, ...extraPath),
      CI: "true",
      GITHUB_ACTIONS: "true",
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_BASE_REF: "main",
      GITHUB_HEAD_REF: "change",
      GITHUB_REF: "refs/pull/7/merge",
      GITHUB_WORKSPACE: repo,
      RUNNER_TEMP: temp,
      GITHUB_OUTPUT: output,
      ...files,
      ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expand(v)])),
    };
    const result = await runAsync("bash", ["--noprofile", "--norc", "-eo", "pipefail", script], {
      cwd: repo,
      env: stepEnv,
    });
    ran.push(step.name ?? step.id ?? String(index));
    stdout += result.stdout;
    for (const line of readFileSync(output, "utf8").split("\n")) {
      const eq = line.indexOf("=");
      if (eq > 0 && step.id) outputs[`${step.id}.${line.slice(0, eq)}`] = line.slice(eq + 1);
    }
    if (result.status !== 0) {
      status = result.status ?? 1;
      stdout += result.stderr;
      break;
    }
  }
  return { status, stdout, ran, outputs, summary: readFileSync(files.GITHUB_STEP_SUMMARY, "utf8"), temp };
}

// The two pipelines install the package: at once, as users' CI would on two runners.
t.test("CI for users' repositories", { jobs: 2 }, async (t) => {
  t.test("the GitHub Action", { buffered: true }, async (t) => {
    t.equal(action.runs.using, "composite");
    t.equal(
      action.inputs.package?.default,
      `rlark@${version}`,
      "the default package is this version, pinned",
    );
    for (const step of action.runs.steps)
      t.notMatch(
        step.run ?? "",
        /\$\{\{/,
        `${step.name ?? step.uses}: inputs reach the script through env only`,
      );

    const { repo, commit } = pullRequest("action");
    commit("jobs/extra.yaml", path.join(root, "examples/jobs/ppo-cartpole-v1.yaml"));
    // A second Job of the same name would be a duplicate: rename the copy.
    const extra = path.join(repo, "jobs/extra.yaml");
    writeFileSync(
      extra,
      readFileSync(extra, "utf8").replace("name: ppo-cartpole-v1", "name: ppo-cartpole-v2"),
    );
    mustRun(
      "git",
      ["-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "--quiet", "-am", "v2"],
      {
        cwd: repo,
      },
    );

    const clean = await runAction(repo, { package: tarball, junit: "rlark-junit.xml" });
    t.equal(clean.status, 0, clean.stdout);
    t.same(clean.ran, ["Install rlark", "rlark validate", "rlark plan"]);
    t.match(clean.stdout, `${version}\n`, "the pinned package ran");
    t.match(clean.summary, /against FETCH_HEAD/, "the plan compares with the pull request's base");
    t.match(clean.summary, /RLark plan: 1 to create, 0 to change, 0 to delete/, "only the new Job is new");
    t.match(clean.summary, /create Job <code>ppo-cartpole-v2<\/code> · jobs\/extra\.yaml:2/);
    t.equal(clean.outputs["plan.plan-file"], path.join(clean.temp, "rlark-plan.md"));
    t.match(readFileSync(path.join(repo, "rlark-junit.xml"), "utf8"), /<testsuites/);

    commit("jobs/typo.yaml", path.join(root, "examples/invalid/schema-enum.yaml"));
    // A re-run on the same runner from the validation (the install takes half a minute).
    const broken = await runAction(
      repo,
      { package: tarball, junit: "rlark-junit.xml" },
      { temp: clean.temp, from: "rlark validate" },
    );
    t.equal(broken.status, 1, "an invalid manifest fails the job");
    t.same(broken.ran, ["rlark validate"], "no plan for an invalid revision");
    t.match(broken.stdout, /^::error file=jobs\/typo\.yaml,line=14,col=17,title=[^:]*::/m);
    t.match(readFileSync(path.join(repo, "rlark-junit.xml"), "utf8"), /<failure/);
  });

  t.test("the GitLab CI template", { buffered: true }, async (t) => {
    const template = parse(readFileSync(path.join(root, "ci/gitlab/rlark.gitlab-ci.yml"), "utf8")) as Record<
      string,
      { before_script?: string[]; script?: string[] } & Record<string, unknown>
    > & { variables: Record<string, string> };
    t.equal(
      template.variables.RLARK_PACKAGE,
      `rlark@${version}`,
      "the default package is this version, pinned",
    );
    const hidden = template[".rlark"];
    const { repo, commit } = pullRequest("gitlab");
    // `sh -e`, as the runner runs before_script and a job's script in one shell.
    // The second job runs where the first installed the package (an install takes half a minute).
    let installed = false;
    const job = (name: string) => {
      const before = (hidden?.before_script ?? []).filter(
        (line) => !installed || !line.startsWith("npm install"),
      );
      installed = true;
      const lines = [...before, ...(template[name]?.script ?? [])];
      const script = path.join(work, `gitlab-${name}.sh`);
      writeFileSync(script, `${lines.join("\n")}\n`);
      return runAsync("sh", ["-e", script], {
        cwd: repo,
        env: {
          ...env(node24),
          ...template.variables,
          RLARK_PACKAGE: tarball,
          RLARK_PREFIX: path.join(work, "gitlab-cli"),
          CI: "true",
          GITLAB_CI: "true",
          CI_PROJECT_DIR: repo,
          CI_PIPELINE_SOURCE: "merge_request_event",
          CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
        },
      });
    };
    t.ok(existsSync(repo));
    const plan = await job("rlark-plan");
    t.equal(plan.status, 0, plan.stderr);
    t.match(readFileSync(path.join(repo, "rlark-plan.md"), "utf8"), /against FETCH_HEAD/);

    commit("jobs/typo.yaml", path.join(root, "examples/invalid/schema-enum.yaml"));
    const validate = await job("rlark-validate");
    t.equal(validate.status, 1, "an invalid manifest fails the job");
    t.match(validate.stdout, "error: jobs/typo.yaml:14:17 Job typo-kind");
    t.match(readFileSync(path.join(repo, "rlark-junit.xml"), "utf8"), /<failure[^>]*>[^<]*jobs\/typo\.yaml/);
  });
});
