// rlark-net: the one piece of the Domain data path that Node cannot do (seed 001 §4.3, ADR 0007).
//
//	rlark-net init      installs, in the pod's network namespace, a nat REDIRECT of every TCP
//	                    connection to RLARK_DOMAIN_CIDR (except those of uid RLARK_SIDECAR_UID) to
//	                    127.0.0.1:RLARK_OUTBOUND_PORT, then exits. Needs NET_ADMIN (and NET_RAW).
//	rlark-net outbound  listens on 127.0.0.1:RLARK_OUTBOUND_PORT, reads each redirected
//	                    connection's original destination (SO_ORIGINAL_DST) and hands the connection
//	                    to the sidecar's unix socket (RLARK_SIDECAR_SOCKET) preceded by a PROXY
//	                    protocol v1 line: "PROXY TCP4 <src> <dst> <sport> <dport>\r\n". Unprivileged.
//
// Go standard library only: gVisor and tun2socks are not reachable from this build machine.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

const chain = "RLARK_OUTPUT"

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rlark-net: "+format+"\n", args...)
	os.Exit(1)
}

func iptables(args ...string) error {
	out, err := exec.Command(env("RLARK_IPTABLES", "iptables"), append([]string{"-w", "-t", "nat"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runInit is idempotent: a restarted init container flushes and refills its own chain.
func runInit() {
	cidr := os.Getenv("RLARK_DOMAIN_CIDR")
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		fail("RLARK_DOMAIN_CIDR=%q is not an IPv4 CIDR: %v", cidr, err)
	}
	uid := env("RLARK_SIDECAR_UID", "1337")
	if _, err := strconv.ParseUint(uid, 10, 32); err != nil {
		fail("RLARK_SIDECAR_UID=%q is not a uid", uid)
	}
	port := env("RLARK_OUTBOUND_PORT", "15001")
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		fail("RLARK_OUTBOUND_PORT=%q is not a port", port)
	}
	if iptables("-N", chain) != nil {
		if err := iptables("-F", chain); err != nil {
			fail("%v", err)
		}
	}
	steps := [][]string{
		{"-A", chain, "-m", "owner", "--uid-owner", uid, "-j", "RETURN"},
		{"-A", chain, "-p", "tcp", "-d", cidr, "-j", "REDIRECT", "--to-ports", port},
	}
	for _, step := range steps {
		if err := iptables(step...); err != nil {
			fail("%v", err)
		}
	}
	if iptables("-C", "OUTPUT", "-j", chain) != nil {
		if err := iptables("-A", "OUTPUT", "-j", chain); err != nil {
			fail("%v", err)
		}
	}
	fmt.Printf("rlark-net: tcp to %s (but uid %s) redirected to 127.0.0.1:%s\n", cidr, uid, port)
}

// originalDst reads SO_ORIGINAL_DST (SOL_IP, 80): a sockaddr_in that conntrack kept from before
// the REDIRECT.
func originalDst(conn *net.TCPConn) (*net.TCPAddr, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var addr syscall.RawSockaddrInet4
	var sockErr error
	err = raw.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(addr))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_IP, 80,
			uintptr(unsafe.Pointer(&addr)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			sockErr = errno
		}
	})
	if err != nil {
		return nil, err
	}
	if sockErr != nil {
		return nil, fmt.Errorf("SO_ORIGINAL_DST: %v", sockErr)
	}
	port := int(addr.Port>>8) | int(addr.Port&0xff)<<8
	return &net.TCPAddr{IP: net.IPv4(addr.Addr[0], addr.Addr[1], addr.Addr[2], addr.Addr[3]), Port: port}, nil
}

type closeWriter interface{ CloseWrite() error }

func pipe(dst, src net.Conn, done chan<- struct{}) {
	io.Copy(dst, src)
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
	}
	done <- struct{}{}
}

func handle(conn *net.TCPConn, socket string) {
	defer conn.Close()
	dst, err := originalDst(conn)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rlark-net: %v\n", err)
		return
	}
	src := conn.RemoteAddr().(*net.TCPAddr)
	up, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rlark-net: sidecar %s: %v\n", socket, err)
		return
	}
	defer up.Close()
	if _, err := fmt.Fprintf(up, "PROXY TCP4 %s %s %d %d\r\n", src.IP, dst.IP, src.Port, dst.Port); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go pipe(up, conn, done)
	go pipe(conn, up, done)
	<-done
	<-done
}

func runOutbound() {
	port := env("RLARK_OUTBOUND_PORT", "15001")
	socket := os.Getenv("RLARK_SIDECAR_SOCKET")
	if socket == "" {
		fail("RLARK_SIDECAR_SOCKET is not set")
	}
	listener, err := net.Listen("tcp4", "127.0.0.1:"+port)
	if err != nil {
		fail("listen: %v", err)
	}
	// The sidecar reads this line to know the listener is up.
	fmt.Printf("rlark-net: outbound listening on %s\n", listener.Addr())
	for {
		conn, err := listener.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		go handle(conn.(*net.TCPConn), socket)
	}
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: rlark-net init | outbound")
	}
	switch os.Args[1] {
	case "init":
		runInit()
	case "outbound":
		runOutbound()
	case "-h", "--help", "help":
		fmt.Println("usage: rlark-net init | outbound (see operators/network/rlark-net/main.go)")
	default:
		fail("unknown command %q: use init or outbound", os.Args[1])
	}
}
