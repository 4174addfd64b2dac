// The byte-level contract of access streams (shell, exec, port forwarding, files) between the
// hub and an agent: both ends import it, so it lives below both.
export {
  type ExitStatus,
  encodeFrame,
  type Frame,
  FrameDecoder,
  FrameType,
  MAX_FRAME_PAYLOAD,
  parseExit,
  parseResize,
  pumpAsFrames,
} from "./frames.ts";
export {
  ACCESS_FILES_PURPOSE,
  ACCESS_FORWARD_PURPOSE,
  ACCESS_SESSION_PURPOSE,
  type AccessForwardRequest,
  type AccessHopTicket,
  type AccessPodRef,
  type AccessSessionRequest,
  parseAccessForwardRequest,
  parseAccessHop,
  parseAccessSessionRequest,
} from "./request.ts";
