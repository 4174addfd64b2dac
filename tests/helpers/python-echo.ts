// Python programs a Domain pod runs in the network tests: an echo server on :7000, a client that
// streams to it until the connection breaks (then says how it ended), and a one-shot round trip.
// Python, not Node: they are the unmodified programs the data path must carry.
import { echoServerPython } from "../../hack/bench/probes.ts";

export const ECHO = echoServerPython("0.0.0.0", 7000);

export const STREAM = `import socket,sys
c=socket.create_connection((sys.argv[1],7000),timeout=30)
print("streaming",flush=True)
try:
  while True:
    c.sendall(b"x"*65536)
    n=0
    while n<65536:
      d=c.recv(65536)
      if not d: raise EOFError("closed")
      n+=len(d)
except Exception as e:
  print("broken",type(e).__name__,flush=True);sys.exit(3)`;

export const ROUND_TRIP = `import socket,sys
c=socket.create_connection((sys.argv[1],7000),timeout=5);c.sendall(b"hi");print(c.recv(2).decode())`;
