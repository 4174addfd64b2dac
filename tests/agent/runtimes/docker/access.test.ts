// SFTP and port-forwards into docker pods on a real dockerd of the test's own, at the runtime's
// access facet (the bastion end to end is tests/e2e/hub-agent/docker-access.test.ts): the
// container's own sftp-server answers SFTP's handshake from the image's working directory; a
// forward reaches a port on the container's loopback and nothing else.
import { once } from "node:events";
import t from "tap";
import { startDockerd } from "../../../helpers/dockerd.ts";
import { rlarkNetBinary } from "../../../helpers/domain-net.ts";
import { dockerTask, NAMESPACE, openDockerRuntime, waitForPod } from "./helpers.ts";

/** SSH_FXP_INIT, version 3: the first packet of every SFTP session. */
const INIT = Buffer.from([0, 0, 0, 5, 1, 0, 0, 0, 3]);
/** SSH_FXP_VERSION */
const VERSION = 2;

t.test("docker pods' files and ports", async (t) => {
  const engine = await startDockerd(t);
  const runtime = await openDockerRuntime(t, engine, { rlarkNet: rlarkNetBinary() });
  runtime.apply([
    dockerTask("web", {
      command: ["sh", "-c"],
      args: [
        "mkdir -p /srv && echo served > /srv/index.html && httpd -p 127.0.0.1:8080 -h /srv && sleep 1000",
      ],
    }),
  ]);
  await waitForPod(runtime, "web-0", "running", (p) => p.phase === "Running");
  const pod = { namespace: NAMESPACE, name: "web-0" };

  await t.test("the container's own sftp-server answers SFTP's handshake", async (t) => {
    const files = await runtime.access.openFiles(pod);
    t.equal(files.root, "/", "the image sets no working directory: the root");
    files.server.write(INIT);
    // the server's first packet, or its end if it did not start
    const reply = await Promise.race([
      once(files.server, "data").then(([data]) => data as Buffer),
      once(files.server, "end").then(() => Buffer.alloc(0)),
    ]);
    t.equal(reply[4], VERSION, "SSH_FXP_VERSION came back");
    files.server.end();
  });

  await t.test("a forward reaches the container's loopback port", async (t) => {
    const stream = await runtime.access.connect(pod, 8080);
    stream.write("GET /index.html HTTP/1.0\r\n\r\n");
    let got = "";
    for await (const chunk of stream) got += chunk.toString();
    stream.end(); // both ways done: the relay in the container's namespace goes
    t.match(got, /^HTTP\/1\.[01] 200/, "httpd in the container answered");
    t.match(got, /served/);
    await t.rejects(runtime.access.connect(pod, 9), /port 9/, "a port nothing listens on is refused");
  });

  await t.test("a pod that is not this runtime's is refused before anything starts", async (t) => {
    await t.rejects(
      runtime.access.openFiles({ namespace: NAMESPACE, name: "stranger-0" }),
      /not one of this agent's pods/,
    );
    await t.rejects(runtime.access.connect({ namespace: NAMESPACE, name: "stranger-0" }, 8080), /not one of/);
  });
});
