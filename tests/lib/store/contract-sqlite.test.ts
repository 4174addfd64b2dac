import t from "tap";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { storeContract } from "./contract.ts";
import { tempDir } from "./helpers.ts";

for (const durability of ["pipelined", "inline"] as const) {
  storeContract(t, `sqlite (${durability})`, async (t) => {
    const store = openSqliteStore({ dataDir: tempDir(t), durability, eventRetention: 16 });
    t.teardown(() => store.close());
    return store;
  });
}
