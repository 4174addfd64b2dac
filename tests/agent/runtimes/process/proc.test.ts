import { spawn } from "node:child_process";
import t from "tap";
import {
  isSameProcessAlive,
  parseProcStat,
  processGroupMembers,
  readProcStat,
} from "../../../../operators/agent/runtimes/process/proc.ts";
import { onProcesses, waitFor } from "../../../helpers/wait-for.ts";

t.test("a command name with spaces and parentheses does not shift the fields", async (t) => {
  const line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
  t.match(parseProcStat(line), { pid: 4242, state: "S", ppid: 1, pgrp: 4242, startTime: 987654 });
});

t.test("a pid is the same process only while its start time matches", async (t) => {
  const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
  t.teardown(() => child.kill("SIGKILL"));
  const pid = child.pid!;
  const stat = await waitFor("the child in /proc", () => readProcStat(pid), onProcesses);
  t.ok(isSameProcessAlive(pid, stat.startTime));
  t.notOk(isSameProcessAlive(pid, stat.startTime + 1), "a reused pid is not mistaken for the process");
  t.same(processGroupMembers(pid), [pid], "the detached child leads its own group");
  child.kill("SIGKILL");
  await waitFor("the child to be gone", () => !isSameProcessAlive(pid, stat.startTime), onProcesses);
  t.same(processGroupMembers(pid), []);
});
