// Child process for the crash test: runs the Domain controller on a data dir and prints
// "allocated <domain> <json>" once a Domain's status holds an address for every pod (watch
// events arrive after commit, so a printed allocation is durable). The parent kills it with
// SIGKILL part-way through.
import type { Domain } from "../../../operators/api/index.ts";
import { createDomainController } from "../../../operators/controllers/domain/index.ts";
import { Manager } from "../../../operators/lib/controller/index.ts";
import { openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";

const [dataDir, podsPerDomain] = process.argv.slice(2);
if (!dataDir || !podsPerDomain) throw new Error("usage: crash-hub.ts <dataDir> <podsPerDomain>");
const store = openSqliteStore({ dataDir });
const pki = openCertificateAuthority({ dataDir });
await store.watch<Domain>("Domain", {}, (event) => {
  const allocations = event.object.status?.ipAllocations ?? [];
  if (allocations.length === Number(podsPerDomain))
    process.stdout.write(`allocated ${event.object.metadata.name} ${JSON.stringify(allocations)}\n`);
});
const manager = new Manager({ store, resyncPeriod: 0, workers: 2 });
manager.add(createDomainController({ pki, dataDir }));
await manager.start();
