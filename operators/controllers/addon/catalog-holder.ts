// The catalog the last accepted revision was validated with: the revision path sets it, the
// Addon controller renders from it. Empty after a restart until a revision is applied; releases
// already in the store keep what they rendered meanwhile.
import type { AddonCatalog } from "../../api/index.ts";

export class AddonCatalogHolder {
  #catalog: AddonCatalog | undefined;
  #listeners = new Set<() => void>();

  get current(): AddonCatalog | undefined {
    return this.#catalog;
  }

  set(catalog: AddonCatalog): void {
    this.#catalog = catalog;
    for (const listener of this.#listeners) listener();
  }

  /** Called after every set(); returns an unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
