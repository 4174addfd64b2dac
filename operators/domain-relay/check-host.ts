// checkHostInDomain: whether a virtual IP belongs to a pod of the Domain, and in which cluster,
// by the Domain's own allocation table (Domain status.ipAllocations, which the Domain controller
// persists before any DomainPeer shows an address).

import type { Domain, IPAllocation } from "../api/index.ts";
import type { Store } from "../lib/store/index.ts";

export async function checkHostInDomain(
  store: Store,
  domain: string,
  ip: string,
): Promise<IPAllocation | undefined> {
  const object = await store.get<Domain>("Domain", "", domain);
  if (!object || object.metadata.deletionTimestamp) return undefined;
  return object.status?.ipAllocations?.find((a) => a.ip === ip);
}
