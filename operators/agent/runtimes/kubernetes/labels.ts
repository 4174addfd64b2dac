// What the kubernetes runtime selects its own objects by; the label and value themselves are
// well-known names (api/well-known.ts).
import { MANAGED_BY_AGENT, MANAGED_BY_LABEL } from "../../../api/index.ts";

/** Selects every object this runtime manages. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_AGENT}`;
