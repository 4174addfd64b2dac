import t from "tap";
import { clusterOf, namespaceFor } from "../../operators/api/index.ts";

t.test("the placement namespace rule goes both ways", async (t) => {
  t.equal(namespaceFor("edge-01"), "agent-edge-01");
  t.equal(clusterOf(namespaceFor("edge-01")), "edge-01");
  t.equal(clusterOf("agent-"), undefined, "no cluster has an empty name");
  t.equal(clusterOf("default"), undefined);
  t.equal(clusterOf(undefined), undefined);
});
