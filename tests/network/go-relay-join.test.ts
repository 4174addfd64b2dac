// rlark-net relay's join when one side resets (issue 25): what that side sent before its reset
// still reaches the other side, followed by an end, even when that side reads slowly. The test is
// Go's (operators/network/rlark-net/relay_test.go: real loopback sockets, the relay's own join);
// this runs it with the rest of the suite.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";

const dir = path.resolve(import.meta.dirname, "../../operators/network/rlark-net");

t.test("a side's reset does not drop what it sent before it", async (t) => {
  const { stdout } = await promisify(execFile)("go", ["test", "-count=1", "-run", "^TestJoin", "-v", "."], {
    cwd: dir,
    env: { ...process.env, CGO_ENABLED: "0", GOPROXY: "off" },
    encoding: "utf8",
  });
  t.match(stdout, /--- PASS: TestJoinDeliversWhatAResetSideSentBeforeIt/, "go test passed it");
});
