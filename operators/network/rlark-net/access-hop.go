// rlark-net access-hop: the agent's side of the bastion's byte hop (ADR 0011, third decision). The
// agent starts it (operators/agent/access/hop.ts, supervised by lib/go-child.ts) and asks it, for a
// forward the agent's TypeScript has checked and named, to connect that address and to dial the
// hub's SSH front on its TLS data port with the hub's single-use ticket; then it copies bytes
// between the two, so no byte of the forward passes through the agent's Node process. It decides
// nothing: what to connect and which ticket to present come from the agent.
//
// Control socket (the agent listens, this process dials), JSON lines:
//
//	to the agent    {"op":"hello","port":0}
//	                {"op":"dial","id":N,"ok":true}               connected both ends, joined
//	                {"op":"dial","id":N,"error":E,"refused":B}   refused: the target (B) or the hub
//	                {"op":"closed","id":N,"in":I,"out":O}        a joined pair ended
//	from the agent  {"op":"identity","ca":PEM,"cert":PEM,"key":PEM}  the agent's credentials
//	                {"op":"dial","id":N,"hub":"host:port","ticket":T,"target":"host:port"}
//	                {"op":"dial",...,"target":"unix:PATH","first":F}  SFTP: the agent's own socket,
//	                                                     whose first line F names the session
//	                {"op":"close","id":N}                        end that pair now
//
// The hub's certificate is checked as the agent's tunnel checks the hub's host key: signed by the
// hub CA, role `hub` (subject O), in its validity window; the agent presents its own certificate,
// which the front checks against the ticket's cluster. The ticket is sent only inside TLS, after
// the hub is verified; the front answers "ok\n" once it has taken it.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// Lines from the agent carry PEMs (the identity): bounded, with room for a 4096-bit chain.
	maxHopControlLine = 64 * 1024
	// Dialling a target or the hub, with its TLS handshake and the front's answer.
	hopDialTimeout = 10 * time.Second
	// Pairs at once: beyond, a dial is refused (the hub's per-user limits bound them long before).
	maxHopPairs  = 4096
	hopTicketLen = 32
)

type hopMsg struct {
	Op      string `json:"op"`
	ID      uint64 `json:"id,omitempty"`
	Port    int    `json:"port"`
	CA      string `json:"ca,omitempty"`
	Cert    string `json:"cert,omitempty"`
	Key     string `json:"key,omitempty"`
	Hub     string `json:"hub,omitempty"`
	Ticket  string `json:"ticket,omitempty"`
	Target  string `json:"target,omitempty"`
	First   string `json:"first,omitempty"`
	OK      bool   `json:"ok,omitempty"`
	Error   string `json:"error,omitempty"`
	Refused bool   `json:"refused,omitempty"`
	In      int64  `json:"in,omitempty"`
	Out     int64  `json:"out,omitempty"`
}

// halfConn is a pair's local end: a pod's TCP port or the agent's unix socket.
type halfConn interface {
	net.Conn
	CloseWrite() error
}

type accessHop struct {
	control net.Conn
	sendMu  sync.Mutex
	mu      sync.Mutex
	tls     *tls.Config
	pairs   map[uint64]func()
	open    atomic.Int64
}

func (h *accessHop) send(m hopMsg) {
	data, _ := json.Marshal(m)
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	h.control.Write(append(data, '\n'))
}

// hubVerifier accepts only a certificate of role `hub` signed by the CA in `roots`.
func hubVerifier(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the hub sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return fmt.Errorf("the hub's certificate: %v", err)
		}
		if len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "hub" {
			return errors.New("the data port's certificate is not the hub's")
		}
		return nil
	}
}

func (h *accessHop) identity(m hopMsg) error {
	cert, err := tls.X509KeyPair([]byte(m.Cert), []byte(m.Key))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(m.CA)) {
		return errors.New("no CA certificate")
	}
	config := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS13,
		ServerName:   "hub",
		// The CA and the role are checked in VerifyConnection; the hub has no DNS name to check.
		InsecureSkipVerify: true,
		VerifyConnection:   hubVerifier(roots),
	}
	h.mu.Lock()
	h.tls = config
	h.mu.Unlock()
	return nil
}

// refusedText words a target's refusal as Node's socket errors do (the audit's reason).
func refusedText(err error, target string) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ECONNREFUSED:
			return "connect ECONNREFUSED " + target
		case syscall.ETIMEDOUT:
			return "connect ETIMEDOUT " + target
		}
	}
	return err.Error()
}

func (h *accessHop) dial(m hopMsg) {
	fail := func(text string, refused bool) {
		h.send(hopMsg{Op: "dial", ID: m.ID, Error: text, Refused: refused})
	}
	if h.open.Add(1) > maxHopPairs {
		h.open.Add(-1)
		fail("too many forwards at once", false)
		return
	}
	defer h.open.Add(-1)
	h.mu.Lock()
	config := h.tls
	h.mu.Unlock()
	if config == nil {
		fail("the hop has no identity yet", false)
		return
	}
	if len(m.Ticket) != hopTicketLen {
		fail("bad ticket", false)
		return
	}
	var target halfConn
	if path, ok := strings.CutPrefix(m.Target, "unix:"); ok {
		// The agent's own socket (SFTP: its path filter stays in the agent's TypeScript).
		c, err := net.DialTimeout("unix", path, hopDialTimeout)
		if err != nil {
			fail(err.Error(), false)
			return
		}
		target = c.(*net.UnixConn)
		if _, err := c.Write([]byte(m.First + "\n")); err != nil {
			c.Close()
			fail(err.Error(), false)
			return
		}
	} else {
		c, err := net.DialTimeout("tcp", m.Target, hopDialTimeout)
		if err != nil {
			fail(refusedText(err, m.Target), false)
			return
		}
		c.(*net.TCPConn).SetNoDelay(true)
		target = c.(*net.TCPConn)
	}
	raw, err := net.DialTimeout("tcp", m.Hub, hopDialTimeout)
	if err != nil {
		target.Close()
		fail("the hub's data port: "+err.Error(), false)
		return
	}
	raw.SetDeadline(time.Now().Add(hopDialTimeout))
	conn := tls.Client(raw, config)
	// The ticket goes only after the handshake has verified the hub (VerifyConnection).
	if err := conn.Handshake(); err != nil {
		raw.Close()
		target.Close()
		fail("the hub's data port: "+err.Error(), false)
		return
	}
	answer := make([]byte, 3)
	if _, err := conn.Write([]byte(m.Ticket + "\n")); err == nil {
		_, err = io.ReadFull(conn, answer)
	}
	if string(answer) != "ok\n" {
		raw.Close()
		target.Close()
		fail("the hub's data port refused the ticket", false)
		return
	}
	raw.SetDeadline(time.Time{})
	var once sync.Once
	end := func() {
		once.Do(func() {
			conn.Close()
			target.Close()
		})
	}
	h.mu.Lock()
	h.pairs[m.ID] = end
	h.mu.Unlock()
	h.send(hopMsg{Op: "dial", ID: m.ID, OK: true})
	var in, out atomic.Int64
	done := make(chan struct{}, 2)
	go func() {
		// hub -> pod
		n, err := io.Copy(target, conn)
		in.Add(n)
		if err != nil {
			end()
		} else {
			target.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		// pod -> hub
		n, err := io.Copy(conn, target)
		out.Add(n)
		if err != nil {
			end()
		} else {
			conn.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	end()
	h.mu.Lock()
	delete(h.pairs, m.ID)
	h.mu.Unlock()
	h.send(hopMsg{Op: "closed", ID: m.ID, In: in.Load(), Out: out.Load()})
}

func runAccessHop() {
	fs := flag.NewFlagSet("access-hop", flag.ExitOnError)
	controlPath := fs.String("control", "", "the agent's control socket")
	fs.String("listen", "", "unused: this process listens on nothing")
	fs.String("data", "", "unused")
	fs.Parse(os.Args[2:])
	logComponent = "rlark-net access-hop"
	if *controlPath == "" {
		jsonLog("error", "--control is required", nil)
		os.Exit(2)
	}
	control, err := net.Dial("unix", *controlPath)
	if err != nil {
		jsonLog("error", "control socket", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	h := &accessHop{control: control, pairs: map[uint64]func(){}}
	h.send(hopMsg{Op: "hello"})
	jsonLog("info", "ready", nil)
	scanner := bufio.NewScanner(control)
	scanner.Buffer(make([]byte, 4096), maxHopControlLine)
	for scanner.Scan() {
		var m hopMsg
		if err := json.Unmarshal(scanner.Bytes(), &m); err != nil {
			jsonLog("error", "bad control line from the agent", map[string]any{"error": err.Error()})
			break
		}
		switch m.Op {
		case "identity":
			if err := h.identity(m); err != nil {
				jsonLog("error", "the agent's identity does not load", map[string]any{"error": err.Error()})
			}
		case "dial":
			go h.dial(m)
		case "close":
			h.mu.Lock()
			end := h.pairs[m.ID]
			h.mu.Unlock()
			if end != nil {
				end()
			}
		}
	}
	jsonLog("error", "control socket closed: exiting", nil)
	os.Exit(1)
}
