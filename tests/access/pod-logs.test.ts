// Pod logs end to end on the process runtime: the hub's API and `rlark logs` against a real hub,
// an in-process agent on its SSH tunnel and a real process whose log rotates every few hundred
// lines. Snapshot options, a follow that outlives rotations, refusals, and one audit record each.
import { spawn } from "node:child_process";
import t, { type Test } from "tap";
import type { AccessCheck, HttpAuditRecord } from "../../operators/access/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { runningProcessPod } from "../helpers/process-pod-on-hub.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const cli = new URL("../../operators/cli/main.ts", import.meta.url).pathname;

const files = {
  "cluster.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: local
spec:
  runtime: process
`,
  // Numbered lines, at most 200 a second: the 2 KiB log rotates about every 200 lines, so about
  // once a second. Faster, a follower held off the CPU for a few hundred ms on a loaded machine
  // falls more than the two kept files behind, and the writer discards lines it never read.
  "ticker.yaml": rawJobYaml({
    name: "ticker",
    kind: "Deployment",
    command: [
      "sh",
      "-c",
      "i=0; while :; do echo tick-$i; i=$((i+1)); if [ $((i % 10)) = 0 ]; then sleep 0.05; fi; done",
    ],
  }),
};

async function setup(t: Test, authorize?: AccessCheck) {
  const audit: HttpAuditRecord[] = [];
  const { hub } = await startHubOnGit(t, {
    files,
    audit: (record) => audit.push(record),
    ...(authorize ? { authorize } : {}),
  });
  const pod = (await runningProcessPod(t, hub, "the ticker pod", { logs: { maxBytes: 2048 } })).metadata.name;
  return { hub, pod, audit };
}

function logUrl(hub: Hub, pod: string, query: string): string {
  return `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${pod}/log?namespace=agent-local&${query}`;
}

const bearer = (hub: Hub) => ({ authorization: `Bearer ${hub.adminToken}` });

/** The numbers of the `tick-N` lines in `text`, which must be consecutive. */
function consecutive(t: Test, text: string): number[] {
  const numbers = text
    .split("\n")
    .filter((line) => line.startsWith("tick-"))
    .map((line) => Number(line.slice(5)));
  const gaps = numbers.filter((n, i) => i > 0 && n !== (numbers[i - 1] as number) + 1);
  t.same(gaps, [], "no line lost or repeated");
  return numbers;
}

t.test(
  "the API serves a pod's log: tail, limitBytes, a follow across rotations; each read audited",
  async (t) => {
    const { hub, pod, audit } = await setup(t);
    // The pod has started; its first lines may still be on their way to the file.
    const body = await waitFor(
      "five lines written",
      async () => {
        const snapshot = await fetch(logUrl(hub, pod, "tailLines=5"), { headers: bearer(hub) });
        const text = await snapshot.text();
        return snapshot.status === 200 && text.split("\n").length > 5 && text;
      },
      onRealServers,
    );
    const lines = body.trimEnd().split("\n");
    t.equal(lines.length, 5, "five lines");
    consecutive(t, lines.join("\n"));

    const limited = await fetch(logUrl(hub, pod, "tailLines=100&limitBytes=7"), { headers: bearer(hub) });
    t.equal((await limited.text()).length, 7, "limitBytes cuts the answer");

    // A follow is read as it comes, across at least three rotations of the 2 KiB file.
    const follow = await fetch(logUrl(hub, pod, "tailLines=1&follow=true"), { headers: bearer(hub) });
    t.equal(follow.status, 200);
    const reader = (follow.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    await waitFor(
      "three rotations' worth of lines",
      async () => {
        const { value } = await reader.read();
        text += decoder.decode(value, { stream: true });
        return text.split("\n").length > 800;
      },
      onRealServers,
    );
    await reader.cancel();
    const numbers = consecutive(t, text.slice(0, text.lastIndexOf("\n")));
    t.ok(numbers.length > 800, `${numbers.length} lines followed`);

    const followed = await waitFor(
      "the follow's audit record",
      () => audit.find((r) => r.detail?.follow === true),
      onRealServers,
    );
    t.match(followed, {
      actor: "admin-token",
      role: "admin",
      verb: "logs",
      target: { cluster: "local", namespace: "agent-local", pod, job: "ticker", task: "main" },
      result: "ok",
    });
    t.ok((followed.bytesOut ?? 0) >= text.length, "the follow's bytes are counted");
    t.ok((followed.lines ?? 0) >= numbers.length, "and its lines");
    t.match(
      audit.find((r) => r.detail?.limitBytes === 7),
      { result: "ok", bytesOut: 7 },
    );
    t.notOk(JSON.stringify(audit).includes("tick-"), "no log contents in the audit");
    t.notOk(JSON.stringify(audit).includes(hub.adminToken), "no token in the audit");
  },
);

t.test("bad options, options the process runtime cannot serve, and refused access", async (t) => {
  const { hub, pod, audit } = await setup(t, (principal, verb, target) => ({
    allowed: target.container !== "forbidden",
    reason: `${principal.subject} may not ${verb} ${target.container}`,
  }));
  const bad = await fetch(logUrl(hub, pod, "tailLines=-3"), { headers: bearer(hub) });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { message: /tailLines must be an integer/ });
  const previous = await fetch(logUrl(hub, pod, "previous=true"), { headers: bearer(hub) });
  t.equal(previous.status, 400);
  t.match(await previous.json(), { message: /process runtime keeps no times or run boundaries.*previous/ });
  const denied = await fetch(logUrl(hub, pod, "container=forbidden"), { headers: bearer(hub) });
  t.equal(denied.status, 403);
  t.match(await denied.json(), { message: /may not logs forbidden/ });
  t.match(audit.at(-1), { result: "denied", target: { container: "forbidden" } });
  t.equal((await fetch(logUrl(hub, pod, "tailLines=1"))).status, 401, "no token, no logs");
});

t.test("rlark logs prints a pod's or a Job's output and follows it", async (t) => {
  const { hub, pod } = await setup(t);
  const flags = ["--hub", hub.url, "--token", hub.adminToken];
  const byPod = await rlark(["logs", pod, "--tail", "3", ...flags]);
  t.equal(byPod.code, 0, byPod.stderr);
  t.equal(byPod.stdout.trimEnd().split("\n").length, 3);
  const byTask = await rlark(["logs", "job/ticker/main", "--tail", "2", "--limit-bytes", "5", ...flags]);
  t.equal(byTask.code, 0, byTask.stderr);
  t.equal(byTask.stdout.length, 5);
  const none = await rlark(["logs", "job/nope", ...flags]);
  t.equal(none.code, 1);
  t.match(none.stderr, /no pod found for job\/nope/);
  const since = await rlark(["logs", pod, "--since", "5m", ...flags]);
  t.equal(since.code, 1);
  t.match(since.stderr, /sinceSeconds/);

  const follow = spawn(process.execPath, [cli, "logs", pod, "-f", "--tail", "1", ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.teardown(() => follow.kill("SIGKILL"));
  let out = "";
  follow.stdout.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  await waitFor("followed lines", () => out.split("\n").length > 300, onRealServers);
  follow.kill("SIGINT");
  consecutive(t, out.slice(0, out.lastIndexOf("\n")));
});
