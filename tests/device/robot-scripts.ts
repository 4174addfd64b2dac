// Stand-ins for ROS, which cannot be installed here: small shell scripts that behave as the
// controller needs real ROS to behave. roscore runs until signalled and marks the master up;
// roslaunch (or ros2 launch) needs the master (ROS 1), starts two "nodes" of its own that ignore
// SIGTERM (as a misbehaving node might), and prints a line every 100 ms; the readiness check
// passes while the nodes' file exists. Every process runs a script from `dir`, so the directory's
// path marks them all.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";

export interface RobotScripts {
  dir: string;
  roscore: string;
  roslaunch: string;
  ready: string;
  crash: string;
  /** Files the scripts create: the master is up, the nodes are up. */
  masterFile: string;
  nodesFile: string;
}

export function robotScripts(t: Test, prefix: string): RobotScripts {
  const dir = mkdtempSync(path.join(tmpdir(), `rlark-devctl-${prefix}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, body: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  const masterFile = path.join(dir, "master-up");
  const nodesFile = path.join(dir, "nodes-up");
  const node = write("node.sh", "trap '' TERM\nwhile :; do sleep 0.05; done");
  return {
    dir,
    masterFile,
    nodesFile,
    roscore: write(
      "roscore.sh",
      `trap 'rm -f ${masterFile}; exit 0' TERM\necho "started roscore"\ntouch ${masterFile}\nwhile :; do sleep 0.05; done`,
    ),
    roslaunch: write(
      "roslaunch.sh",
      `if [ "$NEEDS_MASTER" = 1 ] && [ ! -e ${masterFile} ]; then echo "no master" >&2; exit 1; fi
echo "launching with ROBOT_NAME=$ROBOT_NAME"
${node} &
${node} &
touch ${nodesFile}
i=0
while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done`,
    ),
    ready: write("ready.sh", `test -e ${nodesFile} && echo "2 nodes"`),
    crash: write("crash.sh", `echo "launch failed" >&2\nexit 2`),
  };
}
