// Makes sure a namespace the agent writes into exists: its own (the identity Secret) and the
// Tasks'. Looked up first, so an agent whose RBAC may not create namespaces still works where an
// admin made them; created when missing (AlreadyExists from a racing creator is success); and
// when it may not be created, one line says what to apply.
import type { CoreV1Api } from "@kubernetes/client-node";
import { apiErrorCode, describeApiError } from "./api-error.ts";

export class NamespaceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NamespaceError";
  }
}

export async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  try {
    await core.readNamespace({ name });
    return;
  } catch (err) {
    // 403: this identity may not look namespaces up; the write that follows will say more
    if (apiErrorCode(err) === 403) return;
    if (apiErrorCode(err) !== 404) throw new NamespaceError(describeApiError(err, `Namespace ${name}`));
  }
  try {
    await core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    const code = apiErrorCode(err);
    if (code === 409) return;
    if (code === 403) {
      throw new NamespaceError(
        `the Namespace ${name} does not exist and this agent may not create it (${describeApiError(err)}); ` +
          `create it first (kubectl create namespace ${name}) or apply fleet/agent (kubectl apply -k fleet/agent)`,
      );
    }
    throw new NamespaceError(describeApiError(err, `creating Namespace ${name}`));
  }
}
