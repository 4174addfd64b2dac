// The agent's side of the access service: shell and exec sessions, port forwarding and files
// for pods this agent runs, each after the agent's own last check that the pod is here and
// running. The hub has authorized the user before it opens any of these streams. Process-runtime
// pods are local: sessions run here (session.ts); a forward goes through the runtime's connect,
// which reaches a port only when one of the pod's own processes listens on it (every pod, and the
// hub itself under `rlark up`, shares this machine's loopback). A runtime with openSession,
// openFiles and connect (kubernetes) serves sessions, forwards and the sftp-server itself, with
// its own check; the SFTP path policy stays here, the same for both.
import { Socket } from "node:net";
import {
  ACCESS_FILES_PURPOSE,
  ACCESS_FORWARD_PURPOSE,
  ACCESS_SESSION_PURPOSE,
  type AccessPodRef,
  parseAccessForwardRequest,
  parseAccessSessionRequest,
} from "../../lib/access-stream/index.ts";
import type { StreamHandler } from "../../lib/tunnel/index.ts";
import { filterSftp, serverVersion } from "../runtimes/shared/sftp-filter.ts";
import type { AccessEnvironment, Runtime } from "../runtimes/types.ts";
import { containerPolicy, type FilesOptions, startFiles } from "./files.ts";
import { type SessionOptions, startSession } from "./session.ts";

export type AccessOptions = SessionOptions & FilesOptions;

function lastCheck(runtime: Runtime, pod: AccessPodRef): AccessEnvironment {
  if (!runtime.accessEnvironment) throw new Error("this agent's runtime does not serve access sessions");
  const target = runtime.accessEnvironment({ namespace: pod.namespace, name: pod.name });
  if (!target) throw new Error(`pod ${pod.namespace}/${pod.name} is not running on this agent`);
  return target;
}

/** The access stream handlers an agent serves for its runtime. */
export function accessStreams(runtime: Runtime, options: AccessOptions = {}): Record<string, StreamHandler> {
  return {
    [ACCESS_SESSION_PURPOSE]: async (meta) => {
      const request = parseAccessSessionRequest(meta);
      if (!runtime.accessEnvironment && runtime.openSession) return runtime.openSession(request);
      return startSession(request, lastCheck(runtime, request), options);
    },
    [ACCESS_FILES_PURPOSE]: async (meta) => {
      const request = parseAccessSessionRequest(meta);
      if (!runtime.accessEnvironment && runtime.openFiles) {
        const files = await runtime.openFiles(request);
        const version = await serverVersion(files.server).catch((error: Error) => {
          throw new Error(`sftp-server in the container could not start (${error.message})`);
        });
        return filterSftp(files.server, containerPolicy(files.root, options), version);
      }
      if (!runtime.accessEnvironment)
        throw new Error("this agent's runtime serves no files (SFTP) of its pods");
      const target = lastCheck(runtime, request);
      return startFiles(target.cwd, options, target.enter?.prefix);
    },
    [ACCESS_FORWARD_PURPOSE]: async (meta) => {
      const request = parseAccessForwardRequest(meta);
      if (runtime.accessEnvironment) lastCheck(runtime, request);
      if (!runtime.connect) throw new Error("this agent's runtime forwards no ports of its pods");
      const stream = await runtime.connect(request, request.port);
      // Nagle would delay the window adjustments of the SSH hops (ARCHITECTURE.md).
      if (stream instanceof Socket) stream.setNoDelay(true);
      return stream;
    },
  };
}
