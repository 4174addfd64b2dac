// The relay's join when one side resets (`go test ./...` in this directory; hack/network/test-go
// runs it): what that side sent before its reset still reaches the other side, whose reader was
// slow, followed by an end. Resetting the other side at once, as the join did, dropped the bytes
// still queued in the relay's socket to it (a refusal among them, on a stream being set up).
package main

import (
	"bytes"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// tcpPair is a connected pair of loopback TCP sockets; the client's receive buffer is rcvbuf
// bytes when not 0 (set before it connects, so its window is small from the start).
func tcpPair(t *testing.T, ln *net.TCPListener, rcvbuf int) (client, server *net.TCPConn) {
	t.Helper()
	accepted := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	dialer := net.Dialer{Control: func(_, _ string, raw syscall.RawConn) error {
		if rcvbuf > 0 {
			raw.Control(func(fd uintptr) {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
		}
		return nil
	}}
	conn, err := dialer.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := conn.(*net.TCPConn)
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	return c, s
}

// outq is the bytes a socket has sent and not yet had acknowledged (SIOCOUTQ).
func outq(t *testing.T, c *net.TCPConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	raw.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
	})
	return int(n)
}

// established says whether a socket is still in TCP's ESTABLISHED state (tcpi_state, the first
// byte of TCP_INFO); false once it is closed or half-closed.
func established(c *net.TCPConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	info := make([]byte, 256)
	size := uint32(len(info))
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	}); err != nil || errno != 0 {
		return false
	}
	return info[0] == 1 // TCP_ESTABLISHED
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never happened: %s", what)
}

func TestJoinDeliversWhatAResetSideSentBeforeIt(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A reads slowly: its receive buffer is small, so the relay's socket to it holds the rest.
	a, relayA := tcpPair(t, ln, 4096)
	b, relayB := tcpPair(t, ln, 0)
	defer a.Close()
	defer b.Close()

	control, hub := net.Pipe()
	go io.Copy(io.Discard, hub)
	r := &relay{control: control, waiting: map[uint64]*asking{}, pairs: map[string]*pair{}}
	p := &pair{sides: [2]*held{{conn: relayA}, {conn: relayB}}}
	r.pairs["p"] = p
	go r.join("p", p)

	sent := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	if _, err := b.Write(sent); err != nil {
		t.Fatal(err)
	}
	// Every byte B sent is in the relay's kernel (acknowledged), then B resets.
	waitUntil(t, "B's bytes acknowledged", func() bool { return outq(t, b) == 0 })
	b.SetLinger(0)
	b.Close()
	// The relay has acted on the reset (its socket to A is no longer a plain open one) before A
	// reads a byte.
	waitUntil(t, "the relay's end toward A no longer established", func() bool { return !established(relayA) })

	got, err := io.ReadAll(a)
	if err != nil {
		t.Fatalf("A read %d of %d bytes, then: %v", len(got), len(sent), err)
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("A read %d bytes, not the %d B sent", len(got), len(sent))
	}
}
