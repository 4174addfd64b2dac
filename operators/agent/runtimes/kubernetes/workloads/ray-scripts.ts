// The scripts a Ray Task's pods run (seed 000 §9), mounted from a ConfigMap at RAY_SCRIPTS_DIR.
// The container's own command and args become the scripts' arguments: they run once Ray is up.
// Without them the Ray node itself stays in the foreground (`ray start ... --block`).

export const RAY_SCRIPTS_DIR = "/etc/rlark/ray";
export const RAY_PORT = 6379;
export const RAY_DASHBOARD_PORT = 8265;
export const RAY_METRICS_PORT = 8080;
/** How long a worker waits for its head, and a head for its nodes, before failing the pod. */
export const RAY_WAIT_SECONDS = 600;

export const RAY_HEAD_SH = `#!/usr/bin/env bash
# Ray head of an RLark Task. Starts the head; with a command (the arguments), waits until
# RLARK_RAY_TOTAL_NODES nodes have joined and then runs it; without one, keeps Ray in the foreground.
set -euo pipefail
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
ray_args=(--head --port="\${RLARK_RAY_PORT}" --dashboard-host=0.0.0.0
  --dashboard-port="\${RLARK_RAY_DASHBOARD_PORT}" --metrics-export-port="\${RLARK_RAY_METRICS_PORT}")
if [[ $# -eq 0 ]]; then
  exec ray start "\${ray_args[@]}" --block
fi
ray start "\${ray_args[@]}"
python3 "$here/ray_check.py" nodes "\${RLARK_RAY_TOTAL_NODES:-1}" --timeout "\${RLARK_RAY_WAIT_SECONDS}"
exec "$@"
`;

export const RAY_WORKER_SH = `#!/usr/bin/env bash
# Ray worker of an RLark Task. Waits until the head's GCS port answers, joins it; with a command
# (the arguments) runs it once joined, without one keeps Ray in the foreground.
set -euo pipefail
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
python3 "$here/ray_check.py" address "\${RLARK_HEAD_ADDRESS}" --timeout "\${RLARK_RAY_WAIT_SECONDS}"
if [[ $# -eq 0 ]]; then
  exec ray start --address="\${RLARK_HEAD_ADDRESS}" --block
fi
ray start --address="\${RLARK_HEAD_ADDRESS}"
exec "$@"
`;

export const RAY_CHECK_PY = `#!/usr/bin/env python3
"""Waits until a Ray cluster is usable (RLark's ray_head.sh and ray_worker.sh).

  ray_check.py address HOST:PORT [--timeout S]  the head's GCS port accepts TCP connections
  ray_check.py nodes N [--timeout S]            the local Ray cluster has at least N alive nodes

Exits 0 once the condition holds, 1 when the timeout passes first.
"""
import argparse
import socket
import sys
import time


def address_ready(address):
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def alive_nodes():
    import ray  # only the head needs Ray's client; the address check runs without it

    if not ray.is_initialized():
        ray.init(address="auto", logging_level="ERROR")
    return sum(1 for node in ray.nodes() if node.get("Alive"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["address", "nodes"])
    parser.add_argument("value")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--interval", type=float, default=2)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    last = ""
    while True:
        try:
            if args.what == "address":
                ready = address_ready(args.value)
            else:
                ready = alive_nodes() >= int(args.value)
        except Exception as error:  # Ray not up yet: keep waiting
            ready, last = False, str(error)
        if ready:
            return 0
        if time.monotonic() >= deadline:
            detail = f" ({last})" if last else ""
            print(f"ray_check: {args.what} {args.value} not ready after {args.timeout:.0f}s{detail}", file=sys.stderr)
            return 1
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
`;
