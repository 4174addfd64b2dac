// The scripts a Ray Task's pods run (seed 000 §9), mounted from a ConfigMap at RAY_SCRIPTS_DIR.
// The container's own command and args become the scripts' arguments: they run once Ray is up.
// Without them the Ray node itself stays in the foreground (`ray start ... --block`).

export const RAY_SCRIPTS_DIR = "/etc/rlark/ray";
export const RAY_PORT = 6379;
export const RAY_DASHBOARD_PORT = 8265;
export const RAY_METRICS_PORT = 8080;
/** How long a worker waits for its head, and a head for its nodes, before failing the pod. */
export const RAY_WAIT_SECONDS = 600;

/** Where a Ray pod of a Domain finds its own virtual IP (file `ip`, written by the sidecar). */
export const RAY_DOMAIN_IP_DIR = "/var/run/rlark-domain";

export const RAY_HEAD_SH = `#!/usr/bin/env bash
# Ray head of an RLark Task. Starts the head; with a command (the arguments), waits until
# RLARK_RAY_TOTAL_NODES nodes have joined and then runs it; without one, keeps Ray in the foreground.
# In a Domain the head advertises its virtual IP (RLARK_DOMAIN_IP_FILE, written by the sidecar).
set -euo pipefail
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
wait_s="\${RLARK_RAY_WAIT_SECONDS:-600}"
ray_args=(--head --port="\${RLARK_RAY_PORT}" --dashboard-host=0.0.0.0
  --dashboard-port="\${RLARK_RAY_DASHBOARD_PORT}" --metrics-export-port="\${RLARK_RAY_METRICS_PORT}")
if [[ -n "\${RLARK_DOMAIN_IP_FILE:-}" ]]; then
  RLARK_RAY_NODE_IP="$(python3 "$here/ray_check.py" file "$RLARK_DOMAIN_IP_FILE" --timeout "$wait_s")"
  export RLARK_RAY_NODE_IP
  ray_args+=(--node-ip-address="$RLARK_RAY_NODE_IP")
fi
if [[ $# -eq 0 ]]; then
  exec ray start "\${ray_args[@]}" --block
fi
ray start "\${ray_args[@]}"
python3 "$here/ray_check.py" nodes "\${RLARK_RAY_TOTAL_NODES:-1}" --timeout "$wait_s"
exec "$@"
`;

export const RAY_WORKER_SH = `#!/usr/bin/env bash
# Ray worker of an RLark Task. Finds the head (RLARK_HEAD_ADDRESS; for a head in another cluster,
# the ConfigMap's head_address, which the agent fills once the head has a virtual IP), waits until
# its GCS port answers, joins it; with a command (the arguments) runs it once joined, without one
# keeps Ray in the foreground. In a Domain the worker advertises its own virtual IP.
set -euo pipefail
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
wait_s="\${RLARK_RAY_WAIT_SECONDS:-600}"
if [[ -z "\${RLARK_HEAD_ADDRESS:-}" ]]; then
  RLARK_HEAD_ADDRESS="$(python3 "$here/ray_check.py" file "$here/head_address" --timeout "$wait_s")"
fi
export RLARK_HEAD_ADDRESS
ray_args=(--address="$RLARK_HEAD_ADDRESS")
if [[ -n "\${RLARK_DOMAIN_IP_FILE:-}" ]]; then
  RLARK_RAY_NODE_IP="$(python3 "$here/ray_check.py" file "$RLARK_DOMAIN_IP_FILE" --timeout "$wait_s")"
  export RLARK_RAY_NODE_IP
  ray_args+=(--node-ip-address="$RLARK_RAY_NODE_IP")
fi
python3 "$here/ray_check.py" address "$RLARK_HEAD_ADDRESS" --timeout "$wait_s"
if [[ $# -eq 0 ]]; then
  exec ray start "\${ray_args[@]}" --block
fi
ray start "\${ray_args[@]}"
exec "$@"
`;

export const RAY_CHECK_PY = `#!/usr/bin/env python3
"""Waits until a Ray cluster is usable (RLark's ray_head.sh and ray_worker.sh).

  ray_check.py address HOST:PORT [--timeout S]  the head's GCS port accepts TCP connections
  ray_check.py nodes N [--timeout S]            the local Ray cluster has at least N alive nodes
  ray_check.py file PATH [--timeout S]          PATH holds a value; prints it (first line)

Exits 0 once the condition holds, 1 when the timeout passes first.
"""
import argparse
import os
import socket
import sys
import time


def address_ready(address, quiet=3.0):
    """The port accepts and keeps the connection. In a Domain every connection to a virtual IP is
    accepted at once by the pod's own sidecar, which closes it when the far end cannot be reached:
    a connection closed within \`quiet\` seconds without a byte is not the head."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2) as conn:
            conn.settimeout(quiet)
            try:
                return conn.recv(1) != b""
            except socket.timeout:
                return True  # open and silent: a server waiting for its client (gRPC, HTTP)
    except OSError:
        return False


def file_value(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(4096).strip().split("\\n")[0].strip()
    except OSError:
        return ""


def alive_nodes():
    import ray  # only the head needs Ray's client; the address check runs without it

    if not ray.is_initialized():
        node_ip = os.environ.get("RLARK_RAY_NODE_IP")  # the Domain address the node advertises
        extra = {"_node_ip_address": node_ip} if node_ip else {}
        ray.init(address="auto", logging_level="ERROR", **extra)
    return sum(1 for node in ray.nodes() if node.get("Alive"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["address", "nodes", "file"])
    parser.add_argument("value")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--interval", type=float, default=2)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    last = ""
    while True:
        try:
            if args.what == "file":
                value = file_value(args.value)
                if value:
                    print(value)
                    return 0
                ready = False
            elif args.what == "address":
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
