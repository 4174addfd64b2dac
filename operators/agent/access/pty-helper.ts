// A terminal for a process-runtime session without native addons: Python's pty module forks the
// program on a new pty, relays fd 0 <-> the pty <-> fd 1 and reads control lines on fd 3
// ("resize <cols> <rows>", "signal <NAME>"); it exits with the program's status (128+n for a
// signal), so the hub can hand the real exit status to the SSH client.
export const PTY_HELPER = `
import fcntl, os, pty, select, signal, struct, sys, termios
cols, rows, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
pid, master = pty.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, ("%s: %s\\r\\n" % (argv[0], e.strerror)).encode())
    os._exit(127)
def size(c, r):
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", r, c, 0, 0))
size(cols, rows)
def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]
fds, pending = [0, master, 3], b""
while master in fds:
    for fd in select.select(fds, [], [])[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if fd == master:
            if not data:
                fds.remove(master)
                break
            write_all(1, data)
        elif not data:
            fds.remove(fd)
        elif fd == 0:
            write_all(master, data)
        else:
            pending += data
            while b"\\n" in pending:
                line, pending = pending.split(b"\\n", 1)
                words = line.decode(errors="replace").split()
                try:
                    if words[0] == "resize":
                        size(int(words[1]), int(words[2]))
                    elif words[0] == "signal":
                        # The terminal's foreground group; when it reads as none (0), the
                        # program's own group (it leads its session): killpg(0) would signal
                        # this helper's group, which is the agent's.
                        group = os.tcgetpgrp(master)
                        os.killpg(group if group > 0 else pid, getattr(signal, "SIG" + words[1]))
                except Exception:
                    pass
status = os.waitpid(pid, 0)[1]
code = os.waitstatus_to_exitcode(status)
sys.exit(128 - code if code < 0 else code)
`;
