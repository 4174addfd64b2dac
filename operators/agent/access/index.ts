// The agent's side of the access service: shell and exec sessions, port forwarding and files
// for pods this agent runs, each after the agent's own last check that the pod is here and
// running. The hub has authorized the user before it opens any of these streams. A runtime's
// access facet (runtimes/types.ts) says who runs them. Local pods (process runtime): sessions run
// here (session.ts); a forward goes through the facet's connect, which reaches a port only when
// one of the pod's own processes listens on it (every pod, and the hub itself under `rlark up`,
// shares this machine's loopback). Container pods (kubernetes): the runtime serves sessions,
// forwards and the sftp-server itself, with its own check; the SFTP path policy stays here, the
// same for both.
import { Socket } from "node:net";
import type { Duplex } from "node:stream";
import {
  ACCESS_FILES_PURPOSE,
  ACCESS_FORWARD_PURPOSE,
  ACCESS_SESSION_PURPOSE,
  type AccessPodRef,
  parseAccessForwardRequest,
  parseAccessHop,
  parseAccessSessionRequest,
} from "../../lib/access-stream/index.ts";
import type { StreamHandler } from "../../lib/tunnel/index.ts";
import { filterSftp, serverVersion } from "../runtimes/shared/sftp-filter.ts";
import type { AccessEnvironment, LocalAccess, Runtime, RuntimeAccess } from "../runtimes/types.ts";
import { containerPolicy, type FilesOptions, startFiles } from "./files.ts";
import type { AccessHop } from "./hop.ts";
import { type SessionOptions, startSession } from "./session.ts";

export type AccessOptions = SessionOptions &
  FilesOptions & {
    /**
     * The byte hop for forwards the hub sends with a ticket (ADR 0011): `rlark-net access-hop`
     * and the host of the hub the tunnel reached now. Absent: such forwards are served on the
     * stream, as every other.
     */
    hop?: { process: Pick<AccessHop, "dial" | "dialLocal">; hubHost(): string | undefined };
  };

function lastCheck(access: LocalAccess, pod: AccessPodRef): AccessEnvironment {
  const target = access.environment({ namespace: pod.namespace, name: pod.name });
  if (!target) throw new Error(`pod ${pod.namespace}/${pod.name} is not running on this agent`);
  return target;
}

/** The runtime's access facet, or the error saying it has none. */
function accessOf(runtime: Runtime, what: string): RuntimeAccess {
  if (!runtime.access) throw new Error(`this agent's runtime ${what}`);
  return runtime.access;
}

/** The access stream handlers an agent serves for its runtime. */
export function accessStreams(runtime: Runtime, options: AccessOptions = {}): Record<string, StreamHandler> {
  return {
    [ACCESS_SESSION_PURPOSE]: async (meta) => {
      const request = parseAccessSessionRequest(meta);
      const access = accessOf(runtime, "does not serve access sessions");
      if (access.kind === "container") return access.openSession(request);
      return startSession(request, lastCheck(access, request), options);
    },
    [ACCESS_FILES_PURPOSE]: async (meta) => {
      const request = parseAccessSessionRequest(meta);
      const access = accessOf(runtime, "serves no files (SFTP) of its pods");
      let files: Duplex;
      if (access.kind === "container") {
        const opened = await access.openFiles(request);
        const version = await serverVersion(opened.server).catch((error: Error) => {
          throw new Error(`sftp-server in the container could not start (${error.message})`);
        });
        files = filterSftp(opened.server, containerPolicy(opened.root, options), version);
      } else {
        const target = lastCheck(access, request);
        files = await startFiles(target.cwd, options, target.enter?.prefix);
      }
      // The hub offered its byte hop: the filtered server is joined to the hop through this
      // process's unix socket, so its bytes skip the tunnel (the filter stays here).
      const hop = parseAccessHop(meta.hop);
      const hub = options.hop?.hubHost();
      if (hop && options.hop && hub) {
        const at = hub.includes(":") ? `[${hub}]` : hub;
        return options.hop.process.dialLocal({ hub: `${at}:${hop.port}`, ticket: hop.ticket }, files);
      }
      return files;
    },
    [ACCESS_FORWARD_PURPOSE]: async (meta) => {
      const request = parseAccessForwardRequest(meta);
      const access = accessOf(runtime, "forwards no ports of its pods");
      if (access.kind === "local") lastCheck(access, request);
      // The hub offered its byte hop: this process checks, names the address, and the hop
      // connects it; the stream then carries no byte (the answer says `hop: true`).
      const hub = options.hop?.hubHost();
      if (request.hop && options.hop && hub && access.kind === "local" && access.forwardAddress) {
        const target = await access.forwardAddress(request, request.port);
        if (target) {
          const at = hub.includes(":") ? `[${hub}]` : hub;
          return options.hop.process.dial({
            hub: `${at}:${request.hop.port}`,
            ticket: request.hop.ticket,
            target,
          });
        }
      }
      const stream = await access.connect(request, request.port);
      // Nagle would delay the window adjustments of the SSH hops (ARCHITECTURE.md).
      if (stream instanceof Socket) stream.setNoDelay(true);
      return stream;
    },
  };
}
