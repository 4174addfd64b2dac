import { readFile } from "node:fs/promises";
import t from "tap";
import type { Job } from "../../operators/api/generated/job.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { waitFor } from "../helpers/wait-for.ts";

const job = rawJobYaml({ name: "train", task: "actor", command: ["true"] });

t.test("a Pending Job's row says why it is pending", async (t) => {
  const { hub } = await startHubOnGit(t, { intervalMs: 100, files: { "jobs/train.yaml": job } });
  const message = await waitFor("the Job unschedulable", async () => {
    const stored = await hub.store.get<Job>("Job", undefined, "train");
    const conditions = (stored?.status?.conditions ?? []) as {
      type: string;
      status: string;
      message?: string;
    }[];
    return conditions.find((c) => c.type === "Scheduled" && c.status === "False")?.message;
  });
  const run = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken]);
  t.equal(run.code, 0, run.stderr);
  const row = run.stdout.split("\n").find((line) => line.startsWith("train "));
  t.match(row, /^train +Pending +1 +1 +- +/);
  t.ok(row?.endsWith(message), `the row ends with the condition's message (${row})`);
  t.match(run.stdout, /NAME +PHASE +RUN +TASKS +TEAM +MESSAGE/);
});
t.test("escape sequences from the repository are shown escaped, in text and in json", async (t) => {
  const { hub, revision } = await startHubOnGit(t, {
    intervalMs: 100,
    files: {
      // A key that would retitle the terminal and clear it, and a C1 CSI: the refusal names the key.
      "d.yaml":
        'apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: evil\nspec:\n  cidr: 10.0.0.0/24\n  "\\e]0;pwned\\a\\e[2J\\x9b31m": 1\n',
    },
  });
  await waitFor("revision refused", async () => {
    const response = await fetch(`${hub.url}/api/v1/source`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    const source = (await response.json()) as { lastAttemptedRevision?: string; errors?: unknown[] };
    return source.lastAttemptedRevision === revision && (source.errors?.length ?? 0) > 0;
  });
  const status = (...args: string[]) =>
    rlark(["status", "--hub", hub.url, "--token", hub.adminToken, ...args]);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
  const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
  const text = await status();
  t.equal(text.code, 0, text.stderr);
  t.notMatch(text.stdout, raw, "no raw control character");
  t.match(text.stdout, "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m", "the key, escaped");
  const json = await status("--output", "json");
  t.notMatch(json.stdout.trimEnd(), raw, "json: no raw control character");
  const parsed = JSON.parse(json.stdout) as { source: { errors: { path: string }[] } };
  t.equal(
    parsed.source.errors[0]?.path,
    "/spec/\u001b]0;pwned\u0007\u001b[2J\u009b31m",
    "json: the exact text",
  );
});

t.test(
  "a cluster that never connected is Offline, as the dashboard says; nodes' pre-pulled images are listed",
  async (t) => {
    const cluster = await readFile(new URL("../../examples/clusters/beijing.yaml", import.meta.url), "utf8");
    const { hub } = await startHubOnGit(t, { intervalMs: 100, files: { "clusters/beijing.yaml": cluster } });
    await waitFor("the Cluster applied", () => hub.store.get("Cluster", undefined, "beijing"));
    const run = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken]);
    t.equal(run.code, 0, run.stderr);
    const row = run.stdout.split("\n").find((line) => line.startsWith("beijing "));
    t.match(row, /^beijing +\S+ +Offline +- +-$/, "no group, no capabilities reported");
    t.notMatch(run.stdout, /Images pre-pulled/, "no section while no node has images");
    // what a docker or kubernetes agent reports (tests/e2e/real-nodes/image-pre-pull.test.ts)
    const created = await hub.store.create({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Node",
      metadata: { name: "robot", namespace: "agent-edge" },
    });
    const images = [
      {
        image: "rlark.local/busybox:1",
        phase: "Present",
        attempts: 0,
        lastTransitionTime: "2026-12-07T03:00:00.000Z",
      },
      {
        image: "127.0.0.1:1/rlark/missing:1",
        phase: "Failed",
        attempts: 2,
        message: "ErrImagePull: dial tcp 127.0.0.1:1: connect: connection refused",
        lastTransitionTime: "2026-12-07T03:00:01.000Z",
      },
    ];
    await hub.store.updateStatus({ ...created, status: { phase: "Online", images } });
    await hub.store.create({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Node",
      metadata: { name: "quiet", namespace: "agent-edge" },
    });
    const text = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken]);
    t.equal(text.code, 0, text.stderr);
    t.match(text.stdout, /Images pre-pulled onto nodes:\nCLUSTER +NODE +IMAGE +PHASE +SINCE +MESSAGE\n/);
    t.match(text.stdout, /^edge +robot +rlark\.local\/busybox:1 +Present +2026-12-07T03:00:00\.000Z$/m);
    t.match(
      text.stdout,
      /^edge +robot +127\.0\.0\.1:1\/rlark\/missing:1 +Failed \(2x\) +\S+ +ErrImagePull: dial tcp .*refused$/m,
    );
    t.notMatch(text.stdout, /quiet/, "a node without images is not listed");
    const json = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken, "--output", "json"]);
    t.same(JSON.parse(json.stdout).images, [{ cluster: "edge", node: "robot", images }]);
  },
);
