// The agent's side of the access service: shell and exec sessions, port forwarding and files
// for pods this agent runs, each after the agent's own last check that the pod is here and
// running. The hub has authorized the user before it opens any of these streams. Process-runtime
// pods are local: sessions run here (session.ts) and ports are loopback ports (the pod's own, in
// its namespace, when it has a network of its own). A runtime with openSession, openFiles and
// connect (kubernetes) serves sessions, forwards and the sftp-server itself, with its own check;
// the SFTP path policy stays here, the same for both.
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import {
  ACCESS_FILES_PURPOSE,
  ACCESS_FORWARD_PURPOSE,
  ACCESS_SESSION_PURPOSE,
  type AccessPodRef,
  parseAccessForwardRequest,
  parseAccessSessionRequest,
} from "../../lib/access-stream/index.ts";
import type { StreamHandler } from "../../lib/tunnel/index.ts";
import type { AccessEnvironment, Runtime } from "../runtimes/types.ts";
import { containerPolicy, type FilesOptions, startFiles } from "./files.ts";
import { type SessionOptions, startSession } from "./session.ts";
import { filterSftp, serverVersion } from "./sftp-filter.ts";

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
      if (!runtime.accessEnvironment && runtime.connect) return runtime.connect(request, request.port);
      const target = lastCheck(runtime, request);
      if (target.enter)
        return target.enter.connect(request.port).catch((error: Error) => {
          throw new Error(`pod ${request.name} ${error.message}`);
        });
      // Process runtime: the pod's ports are this machine's loopback ports.
      return new Promise<Duplex>((resolve, reject) => {
        const socket = connect({ host: "127.0.0.1", port: request.port });
        socket.once("connect", () => {
          socket.setNoDelay(true);
          socket.off("error", reject);
          resolve(socket);
        });
        socket.once("error", (error) =>
          reject(new Error(`pod ${request.name} port ${request.port}: ${error.message}`)),
        );
      });
    },
  };
}
