// The kubernetes runtime's access facet: sessions, files and port-forwards into pods of this
// agent's Tasks through the pod's subresources (exec, portforward) with the agent's own
// credentials, each after the runtime's last check (pod-access.ts).
import type { KubeConfig } from "@kubernetes/client-node";
import { SFTP_SERVER_PATHS, startExecFiles } from "../../shared/exec-files.ts";
import type { ContainerAccess } from "../../types.ts";
import { checkPodAccess, type PodLookup } from "./pod-access.ts";
import { startPodExec } from "./pod-exec.ts";
import { podPortForward } from "./pod-port-forward.ts";

/** SFTP into pods (shared/exec-files.ts). */
export interface PodFilesOptions {
  /**
   * The policy root in every container: an absolute path. Default the container's `workingDir`,
   * or `/` when its spec sets none.
   */
  root?: string;
  /** Where sftp-server is in the images, tried before the usual paths. */
  sftpServer?: string;
}

export interface ContainerAccessOptions {
  kubeConfig: KubeConfig;
  /** The watched pods (their containers' specs give the default files root). */
  pods: PodLookup;
  /** See KubernetesRuntimeOptions.instance. */
  instance?: string;
  files?: PodFilesOptions;
}

export function containerAccess(options: ContainerAccessOptions): ContainerAccess {
  const { kubeConfig, pods, instance } = options;
  return {
    kind: "container",
    /** A shell or command in a running pod of this agent's Tasks, through pods/exec (pod-exec.ts). */
    async openSession(request) {
      const container = checkPodAccess(pods, instance, request, "session");
      return startPodExec(
        kubeConfig,
        { namespace: request.namespace, name: request.name, container },
        request,
      );
    },
    /** OpenSSH's sftp-server in a running container of this agent's Tasks, through pods/exec. */
    async openFiles(request) {
      const container = checkPodAccess(pods, instance, request, "files");
      const { root, sftpServer } = options.files ?? {};
      const spec = pods
        .get(request.namespace, request.name)
        ?.spec?.containers.find((c) => c.name === container);
      const target = { namespace: request.namespace, name: request.name, container };
      return startExecFiles(
        (command) => startPodExec(kubeConfig, target, { ...target, command }),
        `container ${container} of pod ${request.namespace}/${request.name}`,
        {
          root: root ?? spec?.workingDir ?? "/",
          servers: [...(sftpServer ? [sftpServer] : []), ...SFTP_SERVER_PATHS],
        },
      );
    },
    /** A connection to a port of a running pod of this agent's Tasks, through pods/portforward. */
    async connect(pod, port) {
      checkPodAccess(pods, instance, pod, "forward");
      return podPortForward(kubeConfig, pod, port);
    },
  };
}
