import t from "tap";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { storeContract } from "./contract.ts";
import { tempDir } from "./helpers.ts";

storeContract(t, "sqlite", async (t) => {
  const store = openSqliteStore({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  return store;
});
