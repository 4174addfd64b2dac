// The exit status of a kubernetes exec, from the Status the apiserver sends last: a kubelet's
// ExitCode cause, the "exit status N" / "signal: ..." message kwok and other Go runtimes send, or
// a failure before the program ran.
import t from "tap";
import { execExit } from "../../../../operators/agent/runtimes/kubernetes/access/pod-exec.ts";

t.test("the exit status is read from each form of Status", async (t) => {
  t.same(execExit({ status: "Success" }), { exit: { code: 0 } });
  t.same(
    execExit({
      status: "Failure",
      reason: "NonZeroExitCode",
      message:
        "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
      details: { causes: [{ reason: "ExitCode", message: "3" }] },
    }),
    { exit: { code: 3 } },
    "a kubelet's cause",
  );
  t.same(
    execExit({
      status: "Failure",
      message:
        "Internal error occurred: error executing command in container: cmd wait: sh -c exit 4: exit status 4",
    }),
    { exit: { code: 4 } },
    "kwok's message",
  );
  t.same(
    execExit({
      status: "Failure",
      message: "error executing command in container: cmd wait: sleep 60: signal: killed",
    }),
    { exit: { signal: "KILL" } },
    "killed by a signal",
  );
  const failed = execExit({
    status: "Failure",
    message: 'cmd start: nope : exec: "nope": executable file not found in $PATH',
  });
  t.same(failed.exit, { code: 126 }, "could not start");
  t.match(failed.message, /executable file not found/, "the reason goes to stderr");
  t.same(execExit({}).exit, { code: 126 }, "a Status without anything");
});
