// Hub and `rlark agent --runtime docker` end to end, on a real dockerd of the test's own: a git
// repository, the real hub and the agent as its own process. A two-task Job succeeds; a service
// stops, starts and survives a kill -9 of the agent without a second container; a bad image says
// so on its Task while the other Jobs keep running.
import type { ChildProcess } from "node:child_process";
import t from "tap";
import type { Hub } from "../../../operators/hub/hub.ts";
import type { KubeObject } from "../../../operators/lib/store/index.ts";
import { agentEnrollment, startAgentProcess } from "../../helpers/agent-process.ts";
import { type Dockerd, startDockerd } from "../../helpers/dockerd.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const slow = { ...onRealServers, attempts: 1200 };

const cluster = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: edge
spec:
  runtime: docker
`;

function dockerJob(
  name: string,
  tasks: { name: string; args: string; image?: string; always?: boolean }[],
  extra = "",
): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
${extra}  tasks:
${tasks
  .map(
    (task) => `    - name: ${task.name}
      role: Env
      agentType: Docker
      docker:
        image: ${task.image ?? "rlark-test/busybox:1"}
        command: ["sh", "-c"]
        args: [${JSON.stringify(task.args)}]
${task.always ? "        restartPolicy: Always\n" : ""}`,
  )
  .join("")}`;
}

const phaseOf = (o: KubeObject | undefined) => (o?.status as { phase?: string } | undefined)?.phase;

/** The agent on the test's dockerd, as node "robot". */
function startAgent(hub: Hub, engine: Dockerd, stateDir: string, token?: string): ChildProcess {
  const args = ["--runtime", "docker", "--docker-host", engine.host, "--node-name", "robot"];
  return startAgentProcess(hub, stateDir, args, token);
}

async function serviceContainers(engine: Dockerd) {
  return engine.client.listContainers({ all: true, filters: { label: ["rlinf.io/task=svc-main"] } });
}

t.test(
  "a docker agent runs Jobs, stops and starts them, and adopts its containers after kill -9",
  async (t) => {
    const engine = await startDockerd(t);
    const files = {
      "cluster.yaml": cluster,
      "pair.yaml": dockerJob("pair", [
        { name: "a", args: "echo hello-from-docker" },
        { name: "b", args: "sleep 1; exit 0" },
      ]),
      "svc.yaml": dockerJob("svc", [{ name: "main", args: "sleep 1000", always: true }]),
      "broken.yaml": dockerJob("broken", [
        { name: "main", args: "true", image: "rlark-test/no-such-image:1" },
      ]),
    };
    const { hub, git } = await startHubOnGit(t, { files });
    const { token, stateDir } = await agentEnrollment(hub, "edge");
    let agent = startAgent(hub, engine, stateDir, token);
    t.teardown(() => agent.kill("SIGKILL"));

    await waitFor(
      "pair Succeeded",
      async () => phaseOf(await hub.store.get("Job", undefined, "pair")) === "Succeeded",
      slow,
    );
    t.match((await hub.store.get("Cluster", undefined, "edge"))?.status, {
      phase: "Online",
      runtime: "docker",
    });
    const nodes = await hub.store.list("Node", { namespace: "agent-edge" });
    t.match(nodes.items[0], {
      metadata: { name: "robot" },
      status: { nodeInfo: { containerRuntimeVersion: /^docker:\/\// } },
    });
    const pods = await hub.store.list("Pod", { namespace: "agent-edge" });
    const aPod = pods.items.find((p) => p.metadata.name === "pair-a-0");
    t.ok(aPod, "pods are mirrored");
    const log = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/pods/pair-a-0/log?namespace=agent-edge`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    t.match(await log.text(), /hello-from-docker/, "the pod's log through the hub");

    // A bad image: a clear reason on its Task, and the other Jobs are not disturbed.
    const broken = await waitFor(
      "the broken Task says its image could not be pulled",
      async () => {
        const task = await hub.store.get("Task", "agent-edge", "broken-main");
        return (task?.status as { reason?: string } | undefined)?.reason === "ErrImagePull"
          ? task
          : undefined;
      },
      slow,
    );
    t.match(broken.status, { phase: "Pending", message: /rlark-test\/no-such-image:1 is not on the engine/ });
    await waitFor(
      "svc Running",
      async () => phaseOf(await hub.store.get("Job", undefined, "svc")) === "Running",
      slow,
    );
    const [running] = await serviceContainers(engine);

    // kill -9 of the agent: the engine keeps the container; the next agent adopts it.
    agent.kill("SIGKILL");
    await new Promise((resolve) => agent.once("exit", resolve));
    agent = startAgent(hub, engine, stateDir);
    await waitFor(
      "the restarted agent online with svc Running",
      async () => {
        const status = (await hub.store.get("Cluster", undefined, "edge"))?.status as
          | { capabilities?: { name: string; process: string }[] }
          | undefined;
        const runtime = status?.capabilities?.find((c) => c.name === "runtime/docker");
        return (
          runtime?.process === "RUNNING" &&
          phaseOf(await hub.store.get("Job", undefined, "svc")) === "Running"
        );
      },
      slow,
    );
    const adopted = await serviceContainers(engine);
    t.equal(adopted.length, 1, "no second container for the replica");
    t.equal(adopted[0]?.Id, running?.Id, "the same container");

    // stop, then start: the container goes, and a fresh one runs.
    await git.commit({
      ...files,
      "svc.yaml": dockerJob("svc", [{ name: "main", args: "sleep 1000", always: true }], "  stopped: true\n"),
    });
    await waitFor(
      "svc's container removed",
      async () => (await serviceContainers(engine)).length === 0,
      slow,
    );
    await git.commit(files);
    await waitFor(
      "svc running a fresh container",
      async () => {
        const all = await serviceContainers(engine);
        return all.length === 1 && all[0]?.Id !== running?.Id && all[0]?.State === "running";
      },
      slow,
    );
    t.equal(
      phaseOf(await hub.store.get("Job", undefined, "pair")),
      "Succeeded",
      "the finished Job stays finished",
    );
  },
);
