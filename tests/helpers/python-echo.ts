// Python programs a Domain pod runs in the network tests: an echo server on :7000, a client that
// streams to it until the connection breaks (then says how it ended), and a one-shot round trip.
// Python, not Node: they are the unmodified programs the data path must carry.
export const ECHO = `import socket,threading
s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("0.0.0.0",7000));s.listen(64)
def serve(c):
  with c:
    while True:
      d=c.recv(65536)
      if not d: return
      c.sendall(d)
while True:
  c,_=s.accept();threading.Thread(target=serve,args=(c,),daemon=True).start()`;

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
