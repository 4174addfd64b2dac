// rlark-net: the one piece of the Domain data path that Node cannot do (seed 001 §4.3, ADR 0007).
//
//	rlark-net init      installs, in the pod's network namespace, a nat REDIRECT of every TCP
//	                    connection to RLARK_DOMAIN_CIDR (except those of uid RLARK_SIDECAR_UID) to
//	                    127.0.0.1:RLARK_OUTBOUND_PORT, then exits. Needs NET_ADMIN (and NET_RAW).
//	rlark-net lo-addr   waits (RLARK_IP_WAIT_SECONDS, 600 by default) for the pod's virtual IP in
//	                    RLARK_DOMAIN_IP_FILE, checks it is one IPv4 address in RLARK_DOMAIN_CIDR and
//	                    puts it on lo as a /32, then exits. Needs NET_ADMIN (lo-addr.go).
//	rlark-net sidecar   the pod's data path, started by the sidecar (uid RLARK_SIDECAR_UID, no
//	                    capabilities). Outbound: listens on 127.0.0.1:RLARK_OUTBOUND_PORT, reads each
//	                    redirected connection's original destination (SO_ORIGINAL_DST) and sends
//	                    "CONNECT <ip>:<port>" with header "rlark-pod: RLARK_POD" to the nodeserver's
//	                    unix socket (RLARK_NODESERVER_SOCKET); for a same-cluster target the answer
//	                    may name the target's inbound port to dial directly. Inbound: listens on
//	                    0.0.0.0:RLARK_INBOUND_PORT for streams a nodeserver (or a same-cluster pod's
//	                    rlark-net, with the nodeserver's ticket) brings, each preceded by a PROXY
//	                    protocol v1 line ("PROXY TCP4 <src> <dst> <sport> <dport>\r\n") and a
//	                    ticket line (inbound-auth.go); checks the ticket and connects to that port
//	                    on 127.0.0.1, else on RLARK_POD_IP. Anything else is closed unanswered.
//	rlark-net relay --listen <host:port> --control <socket> --tls <socket>
//	                    the byte path of the hub's Domain relay port, started and supervised by
//	                    the hub (relay.go).
//	rlark-net nodeserver-data
//	                    the byte path of a nodeserver between clusters: end-to-end TLS to the
//	                    peer nodeserver and the copy to the pod's stream, started by the
//	                    nodeserver with a Node IPC channel (datapath.go).
//	rlark-net ssh-front --listen <host:port> --control <socket> --data <socket> --host-key <file>
//	                    the byte path of the bastion's user logins (SFTP, ssh -L), started and
//	                    supervised by the hub; every decision is the hub's (ssh-front.go).
//	rlark-net icmp-probe
//	                    ICMP echo for PingMesh: requests on stdin, RTTs on stdout (icmp.go).
//	rlark-net connect <host:port>
//	                    relays stdin and stdout to a TCP connection (the agent runs it in a
//	                    process pod's namespace for an access port-forward to the pod's own
//	                    loopback): "connected" on stderr once connected, else the error and exit 1.
//
// Go standard library (crypto/tls included) and golang.org/x/crypto/ssh (ssh-front only).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const chain = "RLARK_OUTPUT"

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rlark-net: "+format+"\n", args...)
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

// pipe copies src to dst until src ends, then half-closes dst. Between TCP and unix stream sockets
// io.Copy moves the bytes with splice(2) (TCPConn.ReadFrom and TCPConn.WriteTo): they never enter
// this process, which is why both directions of the pod's data path run here and not in Node.
func pipe(dst, src net.Conn, done chan<- struct{}) {
	io.Copy(dst, src)
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
	}
	done <- struct{}{}
}

// join pipes a and b both ways, then closes both.
func join(a, b net.Conn) {
	done := make(chan struct{}, 2)
	go pipe(a, b, done)
	go pipe(b, a, done)
	<-done
	<-done
	a.Close()
	b.Close()
}

// bufferedTo writes what r read past the header into dst: those bytes are the stream's first.
func bufferedTo(dst net.Conn, r *bufio.Reader) error {
	if n := r.Buffered(); n > 0 {
		rest, _ := r.Peek(n)
		_, err := dst.Write(rest)
		return err
	}
	return nil
}

const (
	dialTimeout   = 10 * time.Second
	headerTimeout = 10 * time.Second
	// A PROXY v1 line is at most 107 bytes; the nodeserver's answers are one short header block.
	maxProxyLine   = 107
	maxAnswerBytes = 4096
	// Streams on :5700 that have not yet shown a valid ticket; more are closed at once, so a
	// flood of idle connections cannot hold the sidecar's memory.
	maxPendingInbound = 256
)

// readAnswer reads the nodeserver's answer to CONNECT (status line and headers, at most
// maxAnswerBytes) and returns the status and the rlark-reason, rlark-direct and rlark-ticket headers.
func readAnswer(r *bufio.Reader) (status int, reason, direct, ticket string, err error) {
	total := 0
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		total += len(line)
		if err != nil || total > maxAnswerBytes {
			return 0, "", "", "", fmt.Errorf("bad answer from the nodeserver (%d bytes): %v", total, err)
		}
		text := strings.TrimRight(string(line), "\r\n")
		if first {
			fields := strings.SplitN(text, " ", 3)
			if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/1.") {
				return 0, "", "", "", fmt.Errorf("bad status line from the nodeserver %q", text)
			}
			if status, err = strconv.Atoi(fields[1]); err != nil {
				return 0, "", "", "", fmt.Errorf("bad status line from the nodeserver %q", text)
			}
			continue
		}
		if text == "" {
			return status, reason, direct, ticket, nil
		}
		name, value, _ := strings.Cut(text, ":")
		switch strings.ToLower(name) {
		case "rlark-reason":
			reason = strings.TrimSpace(value)
		case "rlark-direct":
			direct = strings.TrimSpace(value)
		case "rlark-ticket":
			ticket = strings.TrimSpace(value)
		}
	}
}

// ask sends CONNECT for target to the nodeserver as the pod `pod` and reads the answer. With
// direct, the nodeserver may answer with the address of a same-cluster target's inbound port
// instead of carrying the stream itself (rlark-direct, with the ticket for the target's :5700);
// up is then already closed.
func ask(nodeserver, pod, target string, direct bool) (up *net.UnixConn, r *bufio.Reader, to, ticket string, err error) {
	raw, err := net.DialTimeout("unix", nodeserver, dialTimeout)
	if err != nil {
		return nil, nil, "", "", fmt.Errorf("nodeserver %s: %v", nodeserver, err)
	}
	up = raw.(*net.UnixConn)
	offer := ""
	if direct {
		offer = "rlark-direct: 1\r\n"
	}
	up.SetDeadline(time.Now().Add(headerTimeout))
	if _, err := fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nhost: %s\r\nrlark-pod: %s\r\n%s\r\n", target, target, pod, offer); err != nil {
		up.Close()
		return nil, nil, "", "", err
	}
	r = bufio.NewReaderSize(up, maxAnswerBytes)
	status, reason, to, ticket, err := readAnswer(r)
	if err == nil && status != 200 {
		err = fmt.Errorf("%s refused (%d): %s", target, status, reason)
	}
	if err == nil && to != "" && ticket == "" {
		err = fmt.Errorf("%s: the nodeserver's direct answer has no ticket", target)
	}
	if err != nil || (direct && to != "") {
		up.Close()
		return nil, nil, to, ticket, err
	}
	up.SetDeadline(time.Time{})
	return up, r, "", "", nil
}

// outbound carries a redirected connection to its original destination. The nodeserver decides
// (pod identity, same Domain); a target in this cluster is then dialled straight at its inbound
// port, which keeps every Node process off the same-cluster data path. When that dial fails (a
// network policy between pods, say), the nodeserver carries the stream as for any other target.
func outbound(conn *net.TCPConn, nodeserver, pod, podIP string) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "rlark-net: %v\n", err)
		conn.Close()
	}
	dst, err := originalDst(conn)
	if err != nil {
		fail(err)
		return
	}
	target := net.JoinHostPort(dst.IP.String(), strconv.Itoa(dst.Port))
	up, r, to, ticket, err := ask(nodeserver, pod, target, true)
	if err != nil {
		fail(err)
		return
	}
	if to != "" {
		peer, err := net.DialTimeout("tcp4", to, dialTimeout)
		if err == nil {
			// Source port 0: the line the nodeserver signed (the target sees 127.0.0.1 anyway).
			_, err = fmt.Fprintf(peer, "PROXY TCP4 %s %s 0 %d\r\nRLARK-AUTH v1 %s\r\n", podIP, dst.IP, dst.Port, ticket)
			if err == nil {
				join(conn, peer.(*net.TCPConn))
				return
			}
			peer.Close()
		}
		fmt.Fprintf(os.Stderr, "rlark-net: %s at %s: %v; through the nodeserver instead\n", target, to, err)
		if up, r, _, _, err = ask(nodeserver, pod, target, false); err != nil {
			fail(err)
			return
		}
	}
	if err := bufferedTo(conn, r); err != nil {
		fail(err)
		up.Close()
		return
	}
	join(conn, up)
}

// readLine reads one CRLF-ended line of at most max bytes.
func readLine(r *bufio.Reader, max int) (string, error) {
	line, err := r.ReadSlice('\n')
	if err != nil || len(line) > max || !strings.HasSuffix(string(line), "\r\n") {
		return "", fmt.Errorf("no header line of at most %d bytes (%d read): %v", max, len(line), err)
	}
	return string(line), nil
}

// inbound reads the PROXY line and the ticket a nodeserver (or a pod it vouched for) sends first
// and, only when the ticket holds, connects to the named port of this pod: on 127.0.0.1, or on the
// pod's virtual IP when nothing listens on loopback. Nothing the caller sent reaches the pod
// before that.
func inbound(conn *net.TCPConn, podIP string, auth *inboundAuth, pending chan struct{}) {
	select {
	case pending <- struct{}{}:
	default:
		auth.refuse(conn.RemoteAddr(), fmt.Errorf("%d streams already wait for their ticket", maxPendingInbound))
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Now().Add(headerTimeout))
	r := bufio.NewReaderSize(conn, maxProxyLine+maxAuthLine)
	line, err := readLine(r, maxProxyLine)
	var port int
	if err == nil {
		port, err = proxyPort(line)
	}
	var ticket string
	if err == nil {
		ticket, err = readLine(r, maxAuthLine)
	}
	if err == nil {
		err = auth.check(line, ticket)
	}
	<-pending
	if err != nil {
		auth.refuse(conn.RemoteAddr(), err)
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	app, err := dialLocal(podIP, port)
	if err == nil {
		err = bufferedTo(app, r)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rlark-net: inbound to port %d: %v\n", port, err)
		conn.Close()
		if app != nil {
			app.Close()
		}
		return
	}
	join(conn, app)
}

// proxyPort checks a PROXY v1 line ("PROXY TCP4 <src> <dst> <sport> <dport>\r\n") and returns
// its destination port.
func proxyPort(line string) (int, error) {
	fields := strings.Split(strings.TrimSuffix(line, "\r\n"), " ")
	if len(fields) != 6 || fields[0] != "PROXY" || fields[1] != "TCP4" {
		return 0, fmt.Errorf("bad PROXY header %q", line)
	}
	for _, ip := range fields[2:4] {
		if parsed := net.ParseIP(ip); parsed == nil || parsed.To4() == nil || strings.Contains(ip, ":") {
			return 0, fmt.Errorf("bad PROXY header address %q", ip)
		}
	}
	if _, err := strconv.ParseUint(fields[4], 10, 16); err != nil {
		return 0, fmt.Errorf("bad PROXY header port %q", fields[4])
	}
	port, err := strconv.ParseUint(fields[5], 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("bad PROXY header port %q", fields[5])
	}
	return int(port), nil
}

func dialLocal(podIP string, port int) (*net.TCPConn, error) {
	p := strconv.Itoa(port)
	c, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", p), dialTimeout)
	if errors.Is(err, syscall.ECONNREFUSED) {
		c, err = net.DialTimeout("tcp4", net.JoinHostPort(podIP, p), dialTimeout)
	}
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

func listen(address string) net.Listener {
	listener, err := net.Listen("tcp4", address)
	if err != nil {
		fail("listen: %v", err)
	}
	return listener
}

func serve(listener net.Listener, handle func(*net.TCPConn)) {
	for {
		conn, err := listener.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		conn.(*net.TCPConn).SetNoDelay(true)
		go handle(conn.(*net.TCPConn))
	}
}

func runSidecar() {
	nodeserver := os.Getenv("RLARK_NODESERVER_SOCKET")
	pod := os.Getenv("RLARK_POD")
	podIP := net.ParseIP(os.Getenv("RLARK_POD_IP"))
	if nodeserver == "" {
		fail("RLARK_NODESERVER_SOCKET is not set")
	}
	if pod == "" || strings.ContainsAny(pod, "\r\n") {
		fail("RLARK_POD=%q is not <namespace>/<name>", pod)
	}
	if podIP == nil || podIP.To4() == nil {
		fail("RLARK_POD_IP=%q is not an IPv4 address", os.Getenv("RLARK_POD_IP"))
	}
	auth := newInboundAuth(nodeserver, pod, podIP.String())
	if err := auth.fetch(); err != nil {
		// Not fatal: the first ticket fetches it again.
		logf("%v", err)
	}
	out := listen("127.0.0.1:" + env("RLARK_OUTBOUND_PORT", "15001"))
	in := listen("0.0.0.0:" + env("RLARK_INBOUND_PORT", "5700"))
	// The sidecar reads this line to know both listeners are up.
	fmt.Printf("rlark-net: outbound on %s, inbound on %s\n", out.Addr(), in.Addr())
	go serve(out, func(c *net.TCPConn) { outbound(c, nodeserver, pod, podIP.String()) })
	pending := make(chan struct{}, maxPendingInbound)
	serve(in, func(c *net.TCPConn) { inbound(c, podIP.String(), auth, pending) })
}

func runConnect(address string) {
	conn, err := net.DialTimeout("tcp", address, dialTimeout)
	if err != nil {
		fail("%v", err)
	}
	fmt.Fprintln(os.Stderr, "connected")
	done := make(chan struct{}, 1)
	go func() {
		io.Copy(conn, os.Stdin)
		conn.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}()
	io.Copy(os.Stdout, conn)
	os.Stdout.Close()
	<-done
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: rlark-net init | lo-addr | sidecar | relay | nodeserver-data | connect <host:port>")
	}
	switch os.Args[1] {
	case "init":
		runInit()
	case "lo-addr":
		runLoAddr()
	case "sidecar":
		runSidecar()
	case "relay":
		runRelay(os.Args[2:])
	case "nodeserver-data":
		runNodeserverData()
	case "ssh-front":
		runSSHFront()
	case "access-hop":
		runAccessHop()
	case "icmp-probe":
		runIcmpProbe()
	case "connect":
		if len(os.Args) != 3 {
			fail("usage: rlark-net connect <host:port>")
		}
		runConnect(os.Args[2])
	case "-h", "--help", "help":
		fmt.Println("usage: rlark-net init | lo-addr | sidecar | relay | nodeserver-data | connect <host:port> (see operators/network/rlark-net/main.go)")
	default:
		fail("unknown command %q: use init, lo-addr, sidecar, relay, nodeserver-data, icmp-probe or connect", os.Args[1])
	}
}
