// The SSH front's hop data port and the agent's access-hop against it (ADR 0011, third
// decision), at the Go level: a ticket taken once; replayed, forged, foreign-cluster and
// wrong-role presentations refused with their reasons; an impostor data port refused by the
// agent's side. The test is Go's (operators/network/rlark-net/hop_test.go: real loopback TLS);
// this runs it with the rest of the suite.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";

const dir = path.resolve(import.meta.dirname, "../../operators/network/rlark-net");

t.test("the hop data port takes a ticket once, from its cluster's agent only", async (t) => {
  const { stdout } = await promisify(execFile)("go", ["test", "-count=1", "-run", "^TestHop", "-v", "."], {
    cwd: dir,
    env: { ...process.env, CGO_ENABLED: "0", GOPROXY: "off" },
    encoding: "utf8",
  });
  t.match(stdout, /--- PASS: TestHopTickets/, "tickets: go test passed it");
  t.match(stdout, /--- PASS: TestHopRefusesAnImpostorHub/, "impostor data port: go test passed it");
});
