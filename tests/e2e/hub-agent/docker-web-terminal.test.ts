// The dashboard's web terminal into a docker-runtime pod, in a real Chromium: a real hub with its
// dashboard, an agent with the docker runtime on a real dockerd of the test's own, the pod's
// shell run by the engine's exec API on a terminal. What is typed reaches the container's shell,
// a full-screen program (busybox vi) draws and quits, a resize reaches the program, `exit 3` is
// shown as 3, and a user without `shell` is refused.
import t from "tap";
import { DockerRuntime } from "../../../operators/agent/runtimes/docker/index.ts";
import { hashPassword } from "../../../operators/dashboard/index.ts";
import { policyYaml, readAudit } from "../../access/bastion-fixture.ts";
import { logIn, passwordUserYaml, resizeThenExit, shows, statusIs } from "../../access/web-terminal-page.ts";
import { FAST } from "../../dashboard/dashboard-hub.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { launchChromium } from "../../helpers/chromium.ts";
import { startDockerd, TEST_IMAGE } from "../../helpers/dockerd.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const POD = "svc-main-0";
const slow = { ...onRealServers, attempts: 1200 };

const files = (alicePw: string, bobPw: string) => ({
  "cluster.yaml":
    "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: edge\nspec:\n  runtime: docker\n",
  "svc.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: svc
spec:
  tasks:
    - name: main
      role: Env
      agentType: Docker
      docker:
        image: ${TEST_IMAGE}
        command: ["sh", "-c", "echo in-the-container > /marker; sleep 1000"]
        restartPolicy: Always
`,
  "users.yaml": [passwordUserYaml("alice", ["user"], alicePw), passwordUserYaml("bob", ["user"], bobPw)].join(
    "---\n",
  ),
  "policy.yaml": policyYaml("alice-shell", "  subjects:\n    users: [alice]\n  verbs: [shell]\n"),
});

t.test("the web terminal into a docker pod, in Chromium", async (t) => {
  const engine = await startDockerd(t);
  const [alicePw, bobPw] = await Promise.all([hashPassword("alice pw", FAST), hashPassword("bob pw", FAST)]);
  const { hub } = await startHubOnGit(t, { files: files(alicePw, bobPw), dashboard: true });
  await waitFor("the Cluster from git", async () => hub.store.get("Cluster", undefined, "edge"), slow);
  const runtime = await DockerRuntime.open({
    dockerHost: engine.host,
    nodeName: "robot",
    pollIntervalMs: 200,
  });
  t.teardown(() => runtime.stop({ terminatePods: true }));
  await startAgentOnHub(t, hub, "edge", { runtime, runtimeKind: "docker" });
  await waitFor(
    "the pod running",
    async () => {
      const pod = await hub.store.get("Pod", "agent-edge", POD);
      return (pod?.status as { phase?: string } | undefined)?.phase === "Running";
    },
    slow,
  );
  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const terminalUrl = `${hub.url}/#/terminal/agent-edge/${POD}`;

  await t.test("typing, a full-screen program, a resize and `exit 3`", async (t) => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    t.teardown(() => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await logIn(page, hub.url, "alice", "alice pw");
    await page.goto(terminalUrl);
    await statusIs(page, /^connected$/);
    await page.keyboard.type("echo hi-$((6*7)); cat /marker\n");
    await shows(page, /hi-42\s*\n\s*in-the-container/);

    await page.keyboard.type("vi /tmp/note\n");
    await shows(page, /~\s*\n\s*~/);
    await page.keyboard.type("ihello from vi");
    await shows(page, /hello from vi/);
    await page.keyboard.press("Escape");
    // vi reads what follows an Escape within a moment as one key sequence: wait for its command mode.
    await shows(page, /^- \/tmp\/note/m);
    await page.keyboard.type(":wq\n");
    await page.keyboard.type("clear; cat /tmp/note; echo back-$((2+3))\n");
    await shows(page, /hello from vi\s*\n\s*back-5/);
    t.pass("vi wrote the file in the container and gave the terminal back");

    await resizeThenExit(t, page);
    t.same(errors, [], "no script errors");
    const line = await waitFor(
      "the audit line",
      async () =>
        (await readAudit(hub.audit.path)).find(
          (r) => r.actor === "alice" && r.via === "web" && r.result === "ok",
        ),
      onRealServers,
    );
    t.match(line, { verb: "shell", target: `edge/agent-edge/${POD}`, exitCode: 3 });
  });

  await t.test("a user without shell is refused, and the browser says so", async (t) => {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    await logIn(page, hub.url, "bob", "bob pw");
    await page.goto(terminalUrl);
    t.match(await statusIs(page, /refused|lost/), /refused/, "a refusal, not an exit status");
  });
});
