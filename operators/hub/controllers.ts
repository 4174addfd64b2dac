import { type AddonCatalogHolder, createAddonController } from "../controllers/addon/index.ts";
import { createBundleController } from "../controllers/bundle/index.ts";
import { createDomainController } from "../controllers/domain/index.ts";
import { createJobController } from "../controllers/job/index.ts";
import { createWorkflowController } from "../controllers/workflow/index.ts";
import type { Controller } from "../lib/controller/index.ts";
import type { CertificateAuthority } from "../lib/pki/index.ts";

export interface ControllerDependencies {
  dataDir: string;
  ca: CertificateAuthority;
  /** How long a cluster may be Offline before its not-yet-running Tasks move (ms). */
  offlineGracePeriod?: number;
  /** The addon catalog of the last accepted revision (the revision path sets it). */
  addonCatalog: AddonCatalogHolder;
  /** Bundles' drift is corrected (true) or only reported (hub --no-self-heal). */
  selfHeal?: boolean;
}

/** Every controller a hub runs. */
export function hubControllers(deps: ControllerDependencies): Controller[] {
  return [
    createJobController(
      deps.offlineGracePeriod === undefined ? {} : { offlineGracePeriod: deps.offlineGracePeriod },
    ),
    createWorkflowController(),
    createDomainController({ pki: deps.ca, dataDir: deps.dataDir }),
    createAddonController({ catalog: deps.addonCatalog }),
    createBundleController(deps.selfHeal === undefined ? {} : { selfHeal: deps.selfHeal }),
  ];
}
