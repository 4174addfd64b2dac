// rlark-net relay: the byte path of the hub's Domain relay port (ADR 0007, third decision). The
// hub starts it and restarts it; it decides nothing. On the relay port it sorts connections by
// their first byte: a TLS handshake (the nodeservers' control sessions) is passed whole to the
// hub's TLS listener on a unix socket, after one JSON line naming the remote address; anything
// else must be a ticket line, which it hands to the hub on the control socket and obeys the
// answer: refuse (close), or admit as side 0 or 1 of a pair. Once both sides of a pair are in it
// joins the two TCP connections with io.Copy, which Linux runs as splice(2): no byte of a joined
// stream enters user space, so a join holds no buffer of its own.
//
// Control socket (the hub listens, this process dials; its life is this process's life: when it
// goes, the process exits and the hub starts a new one), JSON lines of at most maxControlLine:
//
//	to the hub    {"op":"hello","port":P}                       listening on P
//	              {"op":"ticket","conn":N,"ticket":T,"remote":R} a data connection's line
//	              {"op":"timeout","conn":N,"remote":R}           no line within the ticket's TTL
//	              {"op":"bytes","pair":ID,"n":N}                 moved since the last report
//	              {"op":"done","pair":ID,"n":N}                  a join ended (the last bytes)
//	from the hub  {"op":"admit","conn":N,"pair":ID,"side":0|1}
//	              {"op":"refuse","conn":N}
//	              {"op":"cancel","pair":ID}                      close the pair's connections
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// 32 hex digits and a newline (operators/lib/relay/protocol.ts).
	ticketLineBytes = 33
	ticketTTL       = 10 * time.Second
	tlsHandshake    = 0x16
	maxControlLine  = 4096
	// A joined direction is copied in slices of this size so the hub sees bytes as they move;
	// each slice is still one splice loop.
	copySlice      = 1 << 20
	reportInterval = 500 * time.Millisecond
	// How long a join that a reset broke waits for the other side to read what it was sent and end.
	drainTimeout = time.Second
)

// jsonLog writes the hub's log line shape (operators/lib/logger.ts) on stderr.
var (
	logMu        sync.Mutex
	logComponent = "rlark-net relay"
)

func jsonLog(level, message string, fields map[string]any) {
	line := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "level": level, "component": logComponent, "message": message}
	for k, v := range fields {
		line[k] = v
	}
	data, _ := json.Marshal(line)
	logMu.Lock()
	os.Stderr.Write(append(data, '\n'))
	logMu.Unlock()
}

type controlMsg struct {
	Op     string `json:"op"`
	Conn   uint64 `json:"conn,omitempty"`
	Pair   string `json:"pair,omitempty"`
	Side   int    `json:"side"`
	Ticket string `json:"ticket,omitempty"`
	Remote string `json:"remote,omitempty"`
	Port   int    `json:"port,omitempty"`
	N      int64  `json:"n,omitempty"`
}

// held is a data connection the hub admitted, with what it sent after its ticket line.
type held struct {
	conn *net.TCPConn
	rest []byte
}

type pair struct {
	sides  [2]*held
	joined bool
	moved  atomic.Int64
	// reported is only touched under relay.mu.
	reported int64
}

// asking is a data connection waiting for the hub's answer.
type asking struct {
	conn   *held
	answer chan bool
}

type relay struct {
	control net.Conn
	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]*asking
	pairs   map[string]*pair
	tlsSock string
}

func (r *relay) send(m controlMsg) {
	data, _ := json.Marshal(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.control.Write(append(data, '\n')); err != nil {
		jsonLog("error", "control socket lost", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
}

// readControl applies the hub's answers; the process ends with the control socket.
func (r *relay) readControl() {
	reader := bufio.NewReaderSize(r.control, maxControlLine)
	for {
		line, err := reader.ReadSlice('\n')
		if err != nil {
			jsonLog("error", "control socket closed", map[string]any{"error": err.Error()})
			os.Exit(1)
		}
		var m controlMsg
		if err := json.Unmarshal(line, &m); err != nil {
			jsonLog("error", "bad control line", map[string]any{"error": err.Error()})
			os.Exit(1)
		}
		switch m.Op {
		case "admit", "refuse":
			r.answer(m)
		case "cancel":
			r.cancel(m.Pair)
		}
	}
}

func (r *relay) cancel(id string) {
	r.mu.Lock()
	p := r.pairs[id]
	delete(r.pairs, id)
	r.mu.Unlock()
	if p == nil {
		return
	}
	for _, s := range p.sides {
		if s == nil {
			continue
		}
		if p.joined {
			s.conn.Close()
		} else {
			go closeUnjoined(s.conn)
		}
	}
}

// closeUnjoined ends a connection that never joined. Its nodeserver is told why on its control
// stream, which the hub closes at the same time, and then closes the connection itself: waiting
// for that (a second at most) lets the reason arrive first, and reading what it sent (its TLS
// hello) makes the end a clean one, not the reset of closing a socket with unread bytes.
func closeUnjoined(conn *net.TCPConn) {
	conn.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, conn)
	conn.Close()
}

// answer places an admitted connection in its pair at once, in the order of the hub's lines, so
// a cancel that follows an admit finds the connection there.
func (r *relay) answer(m controlMsg) {
	r.mu.Lock()
	a := r.waiting[m.Conn]
	delete(r.waiting, m.Conn)
	if a == nil {
		r.mu.Unlock()
		return
	}
	if m.Op != "admit" || m.Side < 0 || m.Side > 1 || a.conn == nil {
		r.mu.Unlock()
		a.answer <- false
		return
	}
	p := r.pairs[m.Pair]
	if p == nil {
		p = &pair{}
		r.pairs[m.Pair] = p
	}
	if p.sides[m.Side] != nil {
		r.mu.Unlock()
		a.answer <- false
		return
	}
	p.sides[m.Side] = a.conn
	ready := p.sides[0] != nil && p.sides[1] != nil && !p.joined
	if ready {
		p.joined = true
	}
	r.mu.Unlock()
	a.answer <- true
	if ready {
		go r.join(m.Pair, p)
	}
}

// request hands the hub what a data connection said; the channel gets its answer: whether the
// hub took the connection (then it belongs to its pair).
func (r *relay) request(m controlMsg, conn *held) chan bool {
	a := &asking{conn: conn, answer: make(chan bool, 1)}
	r.mu.Lock()
	r.nextID++
	m.Conn = r.nextID
	r.waiting[m.Conn] = a
	r.mu.Unlock()
	r.send(m)
	return a.answer
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// reading is a new connection up to its ticket line (or its first bytes, if it is TLS).
type reading struct {
	conn *net.TCPConn
	line [ticketLineBytes]byte
	n    int
}

// end is where the ticket line ends (-1: not yet, or too long once full).
func (c *reading) end() int {
	for i := 0; i < c.n; i++ {
		if c.line[i] == '\n' {
			return i
		}
	}
	return -1
}

func (c *reading) complete() bool { return c.n == len(c.line) || c.end() >= 0 }

func isTimeout(err error) bool {
	var timeout net.Error
	return errors.As(err, &timeout) && timeout.Timeout()
}

// present asks the hub about a complete ticket line; the channel says whether it took it. A
// line too long for a ticket is still the hub's to refuse (and count).
func (r *relay) present(c *reading) chan bool {
	c.conn.SetReadDeadline(time.Time{})
	ticket, h := "", (*held)(nil)
	if end := c.end(); end >= 0 {
		ticket = string(c.line[:end])
		h = &held{conn: c.conn, rest: append([]byte(nil), c.line[end+1:c.n]...)}
	}
	return r.request(controlMsg{Op: "ticket", Ticket: ticket, Remote: remoteIP(c.conn)}, h)
}

func (r *relay) settle(c *reading, taken chan bool) {
	if !<-taken {
		c.conn.Close()
	}
}

// accept takes what a new connection has already sent (TCP_DEFER_ACCEPT accepts it once it has
// sent something) before the next is accepted, so that two uses of one ticket reach the hub in
// the order they came (the first is held, the second refused). The read does not wait: a
// connection with nothing to say yet is read on its own.
func (r *relay) accept(conn *net.TCPConn) {
	conn.SetNoDelay(true)
	c := &reading{conn: conn}
	n, err := readNow(conn, c.line[:])
	c.n = n
	switch {
	case err != nil:
		conn.Close()
	case n > 0 && c.line[0] != tlsHandshake && c.complete():
		go r.settle(c, r.present(c))
	default:
		go r.handle(c)
	}
}

// readNow reads what is there without waiting: 0 and no error when nothing is, io.EOF at the end.
func readNow(conn *net.TCPConn, buf []byte) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	n, readErr := 0, error(nil)
	err = raw.Read(func(fd uintptr) bool {
		n, readErr = syscall.Read(int(fd), buf)
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case readErr == syscall.EAGAIN:
		return 0, nil
	case readErr != nil:
		return 0, readErr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// deferAccept sets TCP_DEFER_ACCEPT on the listener: a connection reaches accept once its first
// bytes are in (or after a second without any).
func deferAccept(_, _ string, raw syscall.RawConn) error {
	var err error
	raw.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, 1)
	})
	return err
}

func (r *relay) handle(c *reading) {
	conn := c.conn
	// A connection that says nothing holds an fd: it gets as long as a ticket lives.
	conn.SetReadDeadline(time.Now().Add(ticketTTL))
	for c.n == 0 || (c.line[0] != tlsHandshake && !c.complete()) {
		m, err := conn.Read(c.line[c.n:])
		c.n += m
		if err != nil {
			if isTimeout(err) && c.n > 0 {
				r.settle(c, r.request(controlMsg{Op: "timeout", Remote: remoteIP(conn)}, nil))
			}
			conn.Close()
			return
		}
	}
	if c.line[0] == tlsHandshake {
		conn.SetReadDeadline(time.Time{})
		r.forwardTLS(conn, c.line[:c.n])
		return
	}
	r.settle(c, r.present(c))
}

// join runs a pair both ways with half-close, as operators/lib/relay/splice.ts does: a clean
// end of one side ends the other's writing; a side gone after its clean end leaves the other to
// say what it still has (read and dropped). A side reset ends the join, but not by resetting
// the other at once: that would drop what was just written to it and not yet sent (the reset
// side's last bytes, a refusal among them). Both sides are half-closed, so what they were sent
// arrives followed by an end, and read (dropped) until their own end, for drainTimeout at most;
// a side that has not ended by then is reset.
func (r *relay) join(id string, p *pair) {
	a, b := p.sides[0], p.sides[1]
	var cleanEnd [2]atomic.Bool
	var broken atomic.Bool
	var ended [2]atomic.Bool // a side read to its end: it can be closed without a reset
	var breakOnce sync.Once
	breakJoin := func() {
		breakOnce.Do(func() {
			broken.Store(true)
			deadline := time.Now().Add(drainTimeout)
			for _, s := range []*held{a, b} {
				s.conn.CloseWrite()
				s.conn.SetReadDeadline(deadline)
			}
		})
	}
	drain := func(from *held, dir int) {
		if _, err := io.Copy(io.Discard, from.conn); err == nil {
			ended[dir].Store(true)
		}
	}
	done := make(chan struct{}, 2)
	pump := func(from, to *held, dir int) {
		defer func() { done <- struct{}{} }()
		if len(from.rest) > 0 {
			if _, err := to.conn.Write(from.rest); err != nil {
				breakJoin()
				drain(from, dir)
				return
			}
			p.moved.Add(int64(len(from.rest)))
		}
		for {
			n, err := io.CopyN(to.conn, from.conn, copySlice)
			p.moved.Add(n)
			if err == nil {
				continue
			}
			if err == io.EOF {
				ended[dir].Store(true)
				cleanEnd[dir].Store(true)
				if !broken.Load() {
					to.conn.CloseWrite()
				}
				return
			}
			if cleanEnd[1-dir].Load() && !broken.Load() {
				// The other way ended cleanly and its writer is gone: drain what is left.
				drain(from, dir)
				return
			}
			breakJoin()
			drain(from, dir)
			return
		}
	}
	go pump(a, b, 0)
	go pump(b, a, 1)
	<-done
	<-done
	for dir, s := range []*held{a, b} {
		if broken.Load() && !ended[dir].Load() {
			reset(s.conn)
		} else {
			s.conn.Close()
		}
	}
	r.mu.Lock()
	if r.pairs[id] == p {
		delete(r.pairs, id)
	}
	last := p.moved.Load() - p.reported
	p.reported += last
	r.mu.Unlock()
	r.send(controlMsg{Op: "done", Pair: id, N: last})
}

func reset(conns ...*net.TCPConn) {
	for _, c := range conns {
		c.SetLinger(0)
		c.Close()
	}
}

// report tells the hub the bytes each join moved since the last report.
func (r *relay) report() {
	for range time.Tick(reportInterval) {
		var out []controlMsg
		r.mu.Lock()
		for id, p := range r.pairs {
			if n := p.moved.Load() - p.reported; n > 0 {
				p.reported += n
				out = append(out, controlMsg{Op: "bytes", Pair: id, N: n})
			}
		}
		r.mu.Unlock()
		for _, m := range out {
			r.send(m)
		}
	}
}

// forwardTLS passes a control connection to the hub's TLS listener, preceded by its remote address.
func (r *relay) forwardTLS(conn *net.TCPConn, first []byte) {
	up, err := net.Dial("unix", r.tlsSock)
	if err != nil {
		jsonLog("warn", "hub TLS listener unreachable", map[string]any{"error": err.Error()})
		conn.Close()
		return
	}
	preface, _ := json.Marshal(map[string]string{"remote": remoteIP(conn)})
	if _, err := up.Write(append(append(preface, '\n'), first...)); err != nil {
		conn.Close()
		up.Close()
		return
	}
	unix := up.(*net.UnixConn)
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(unix, conn)
		unix.CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(conn, unix)
		conn.CloseWrite()
		done <- struct{}{}
	}()
	<-done
	<-done
	conn.Close()
	up.Close()
}

func runRelay(args []string) {
	flags := flag.NewFlagSet("relay", flag.ExitOnError)
	listenAt := flags.String("listen", "", "host:port of the relay port")
	controlSock := flags.String("control", "", "the hub's control socket")
	tlsSock := flags.String("tls", "", "the hub's TLS listener socket")
	flags.Parse(args)
	if *listenAt == "" || *controlSock == "" || *tlsSock == "" {
		fail("usage: rlark-net relay --listen <host:port> --control <socket> --tls <socket>")
	}
	control, err := net.Dial("unix", *controlSock)
	if err != nil {
		fail("control socket: %v", err)
	}
	listener, err := (&net.ListenConfig{Control: deferAccept}).Listen(context.Background(), "tcp4", *listenAt)
	if err != nil {
		jsonLog("error", "listen failed", map[string]any{"listen": *listenAt, "error": err.Error()})
		os.Exit(1)
	}
	r := &relay{control: control, waiting: map[uint64]*asking{}, pairs: map[string]*pair{}, tlsSock: *tlsSock}
	r.send(controlMsg{Op: "hello", Port: listener.Addr().(*net.TCPAddr).Port})
	jsonLog("info", "listening", map[string]any{"address": listener.Addr().String()})
	go r.readControl()
	go r.report()
	for {
		conn, err := listener.Accept()
		if err != nil {
			// Out of fds, most likely: what is open goes on, new connections wait.
			jsonLog("warn", "accept failed", map[string]any{"error": err.Error()})
			time.Sleep(50 * time.Millisecond)
			continue
		}
		r.accept(conn.(*net.TCPConn))
	}
}
