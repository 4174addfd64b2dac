// The store contract against a real kube-apiserver (the shared fleet), CRDs in a group of the
// file's own.
import t from "tap";
import { kubeStoreFixture } from "../../helpers/kube-store.ts";
import { storeContract } from "./contract.ts";

const fixture = await kubeStoreFixture(t, { schemas: "free" });

storeContract(t, "kubernetes", async (t) => {
  await fixture.wipe();
  return fixture.open(t);
});
