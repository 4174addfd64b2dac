// rlark-net lo-addr (issue 24 item 3): the check of the IP file the sidecar writes, and the netlink
// request that puts a Ray pod's virtual IP on lo, in a network namespace of the test's own. The
// test is Go's (operators/network/rlark-net/lo-addr_test.go); this runs it with the rest of the
// suite. The Kubernetes side (the init container after the sidecar) is checked on real nodes by
// tests/e2e/real-nodes/ray-two-clusters.test.ts.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";

const dir = path.resolve(import.meta.dirname, "../../operators/network/rlark-net");

t.test("rlark-net lo-addr checks the IP file and puts the address on lo", async (t) => {
  const { stdout } = await promisify(execFile)("go", ["test", "-count=1", "-run", "^TestLoAddr", "-v", "."], {
    cwd: dir,
    env: { ...process.env, CGO_ENABLED: "0", GOPROXY: "off", GOFLAGS: "-mod=vendor" },
    encoding: "utf8",
  });
  for (const name of [
    "TestLoAddrParsesTheIPFile",
    "TestLoAddrRefusesALongFile",
    "TestLoAddrAddsTheAddressToLoopback",
  ])
    t.match(stdout, new RegExp(`--- PASS: ${name}\\b`), `go test passed ${name}`);
});
