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
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
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
)

// jsonLog writes the hub's log line shape (operators/lib/logger.ts) on stderr.
var logMu sync.Mutex

func jsonLog(level, message string, fields map[string]any) {
	line := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "level": level, "component": "rlark-net relay", "message": message}
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
		if s != nil {
			s.conn.Close()
		}
	}
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

// ask hands the hub what a data connection said and waits for its answer: whether the hub took
// the connection (then it belongs to its pair).
func (r *relay) ask(m controlMsg, conn *held) bool {
	a := &asking{conn: conn, answer: make(chan bool, 1)}
	r.mu.Lock()
	r.nextID++
	m.Conn = r.nextID
	r.waiting[m.Conn] = a
	r.mu.Unlock()
	r.send(m)
	return <-a.answer
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

func (r *relay) handle(conn *net.TCPConn) {
	conn.SetNoDelay(true)
	// A connection that says nothing holds an fd: it gets as long as a ticket lives.
	conn.SetReadDeadline(time.Now().Add(ticketTTL))
	var line [ticketLineBytes]byte
	n, err := conn.Read(line[:1])
	if err != nil || n == 0 {
		conn.Close()
		return
	}
	if line[0] == tlsHandshake {
		conn.SetReadDeadline(time.Time{})
		r.forwardTLS(conn, line[0])
		return
	}
	end := -1
	for end < 0 {
		for i := 0; i < n; i++ {
			if line[i] == '\n' {
				end = i
				break
			}
		}
		if end >= 0 || n == len(line) {
			break
		}
		m, err := conn.Read(line[n:])
		n += m
		if err != nil {
			var timeout net.Error
			if errors.As(err, &timeout) && timeout.Timeout() {
				r.ask(controlMsg{Op: "timeout", Remote: remoteIP(conn)}, nil)
			}
			conn.Close()
			return
		}
	}
	conn.SetReadDeadline(time.Time{})
	// A line too long for a ticket is still the hub's to refuse (and count).
	ticket, h := "", (*held)(nil)
	if end >= 0 {
		ticket = string(line[:end])
		h = &held{conn: conn, rest: append([]byte(nil), line[end+1:n]...)}
	}
	if !r.ask(controlMsg{Op: "ticket", Ticket: ticket, Remote: remoteIP(conn)}, h) {
		conn.Close()
	}
}

// join runs a pair both ways with half-close, as operators/lib/relay/splice.ts does: a clean
// end of one side ends the other's writing; a side reset takes the other with it, reset in turn;
// a side gone after its clean end leaves the other to say what it still has (read and dropped).
func (r *relay) join(id string, p *pair) {
	a, b := p.sides[0], p.sides[1]
	var cleanEnd [2]atomic.Bool
	done := make(chan struct{}, 2)
	pump := func(from, to *held, dir int) {
		defer func() { done <- struct{}{} }()
		if len(from.rest) > 0 {
			if _, err := to.conn.Write(from.rest); err != nil {
				reset(from.conn, to.conn)
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
				cleanEnd[dir].Store(true)
				to.conn.CloseWrite()
				return
			}
			if cleanEnd[1-dir].Load() {
				// The other way ended cleanly and its writer is gone: drain what is left.
				io.Copy(io.Discard, from.conn)
				return
			}
			reset(from.conn, to.conn)
			return
		}
	}
	go pump(a, b, 0)
	go pump(b, a, 1)
	<-done
	<-done
	a.conn.Close()
	b.conn.Close()
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
func (r *relay) forwardTLS(conn *net.TCPConn, first byte) {
	up, err := net.Dial("unix", r.tlsSock)
	if err != nil {
		jsonLog("warn", "hub TLS listener unreachable", map[string]any{"error": err.Error()})
		conn.Close()
		return
	}
	preface, _ := json.Marshal(map[string]string{"remote": remoteIP(conn)})
	if _, err := up.Write(append(append(preface, '\n'), first)); err != nil {
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
	listener, err := net.Listen("tcp4", *listenAt)
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
		go r.handle(conn.(*net.TCPConn))
	}
}
