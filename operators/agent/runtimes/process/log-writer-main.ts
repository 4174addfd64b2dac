// `node log-writer-main.ts <output.log> <maxBytes> <launch token>`: copies its stdin into a
// RotatingLog until end of input, then exits.
//
// Why a process of its own: a pod's stdout and stderr must be a pipe for the size to be bounded
// as it is written (a file the process appends to can only be truncated after the fact, and a
// fast writer outruns any timer). But the reading end of that pipe cannot be the agent: a
// Deployment's processes outlive `rlark up` and `rlark agent` restarts to be adopted, and a pipe
// whose reader has gone kills its writer with SIGPIPE (or blocks it once full). So each run gets
// this small reader, spawned detached (a session of its own, away from the pod's process group
// and from the agent's terminal) just before the pod's process, which is given the pipe's writing
// end (a real pipe, made as a fifo: see openPipe in launch.ts). It outlives the agent with the pod, and it ends by itself when every holder of the
// writing end has exited. The launch token in its argv lets a new agent find it.
//
// Nothing here may die on a write error: the pod would get SIGPIPE. If the log cannot be written
// (disk full, the pod's directory removed), the rest of the input is read and dropped.
import { RotatingLog, trimOversized } from "./log-writer.ts";

const [path, maxBytesArg] = process.argv.slice(2);
if (!path || !maxBytesArg) {
  process.stderr.write("usage: log-writer-main.ts <output.log> <maxBytes> <launch token>\n");
  process.exit(2);
}
const maxBytes = Number(maxBytesArg);
const log = new RotatingLog(path, maxBytes);
let writing = true;
try {
  trimOversized(path, maxBytes);
} catch {
  // The files are left as they are; new output is still bounded.
}
for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
  if (!writing) continue;
  try {
    log.write(chunk);
  } catch {
    writing = false;
  }
}
try {
  log.close();
} catch {
  // Nothing left to save.
}
