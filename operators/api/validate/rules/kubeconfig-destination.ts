import {
  currentClusterOf,
  type KubeconfigOverrides,
  overriddenFields,
  overrideMessage,
} from "../../../lib/kubeconfig-destination.ts";
import { clusterKubeconfigContext } from "../../../lib/seal/index.ts";
import { objectAt, stringAt, type WholeRule } from "../rule-context.ts";

/**
 * An agentless Cluster's unsealed spec.kubeconfig.server and insecureSkipTLSVerify say only what
 * the sealed kubeconfig says: a committer who points them elsewhere would have the hub send the
 * sealed credential there. Checked with the hub's keys (CI cannot open the kubeconfig); an
 * override that cannot be checked (the value does not open here, the kubeconfig names no current
 * cluster) is refused too. Messages name fields, never the kubeconfig's content.
 */
export const kubeconfigDestinationRules: WholeRule = {
  reads: ["Cluster"],
  uses: (ctx) => [ctx.sealCheck],
  run: (ctx) => {
    if (!ctx.sealCheck) return;
    for (const cluster of ctx.ofKind("Cluster")) {
      const kubeconfig = objectAt(objectAt(cluster.object, "spec"), "kubeconfig");
      const sealed = stringAt(kubeconfig, "sealed");
      if (!kubeconfig || sealed === undefined) continue;
      const server = stringAt(kubeconfig, "server");
      const overrides: KubeconfigOverrides = {
        ...(server !== undefined ? { server } : {}),
        ...(kubeconfig.insecureSkipTLSVerify === true ? { insecureSkipTLSVerify: true } : {}),
      };
      const given = Object.keys(overrides) as Array<keyof KubeconfigOverrides>;
      if (given.length === 0) continue;
      let refused: Array<keyof KubeconfigOverrides> = [];
      let problem: string | undefined;
      try {
        problem = ctx.sealCheck(sealed, clusterKubeconfigContext(cluster.name), (plain) => {
          const entry = currentClusterOf(plain.toString("utf8"));
          refused = entry ? overriddenFields(entry, overrides) : given;
        });
      } catch (error) {
        problem = (error as Error).message; // malformed: the schema has said so already
      }
      for (const field of problem ? given : refused)
        ctx.report(
          cluster,
          `/spec/kubeconfig/${field}`,
          "cross/kubeconfig-destination",
          problem
            ? `spec.kubeconfig.${field} cannot be checked against spec.kubeconfig.sealed, which ${problem}: the credential goes only where the sealed kubeconfig says; remove spec.kubeconfig.${field}`
            : overrideMessage(field),
        );
    }
  },
};
