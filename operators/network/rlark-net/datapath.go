// rlark-net nodeserver-data: the byte path of a nodeserver between clusters (issue 25, item 2;
// ADR 0007, third decision). The nodeserver (TypeScript) starts it with a Node IPC channel
// (NODE_CHANNEL_FD) and keeps every decision: the sidecars' CONNECTs, the pods' identity and
// Domain, the HTTP/2 control streams to the hub and their tickets, /stats. This process runs the
// end-to-end mutual TLS 1.3 to the peer nodeserver through the hub's relay (crypto/tls, the
// cluster's certificate for the Domain, sessions resumed per peer cluster) and copies between
// it and the pod's stream, reporting bytes per connection.
//
// Messages are JSON lines on the IPC channel. From the nodeserver:
//
//	{"op":"domain","domain":D,"cert":PEM,"keyPem":PEM,"ca":PEM}   credentials of Domain D (again: replaced)
//	{"op":"forget","domain":D}
//	NODE_HANDLE {"op":"dial",...} with the sidecar's socket       source end: relay, ticket, cluster, head
//	{"op":"serve","id":N,"domain":D,"relay":A,"ticket":T,"cluster":C,"pod":"ip:port","preamble":B64}
//	{"op":"answer","id":N,"status":S,"reason":R}                  refuse a dial that failed (to its sidecar)
//	{"op":"cancel","id":N}                                         the hub ended the stream before it was up
//
// To the nodeserver: {"op":"dialed","id"} (serve: the relay holds our ticket), {"op":"up","id"}
// (the peer is verified, bytes flow), {"op":"fail","id","reason"} (never up; a dial then waits for
// its answer), {"op":"bytes","id","sent","received"} (since the last report) and {"op":"done",...}
// (the last bytes). sent is from the pod, received to it.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// A control message longer than this ends the process: the protocol has none.
	maxDataMsg = 64 * 1024
	// Peer clusters whose sessions are kept per Domain; more start over.
	maxPeerConfigs = 1024
	copyBuffer     = 32 * 1024
	// The end-to-end handshake, including the wait for the other end to reach the relay.
	handshakeTimeout = 20 * time.Second
)

type dataMsg struct {
	// Node's IPC envelope: NODE_HANDLE carries msg and one descriptor.
	Cmd string   `json:"cmd,omitempty"`
	Msg *dataMsg `json:"msg,omitempty"`
	Key string   `json:"key,omitempty"`

	Op       string `json:"op,omitempty"`
	ID       uint64 `json:"id,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Cert     string `json:"cert,omitempty"`
	KeyPem   string `json:"keyPem,omitempty"`
	CA       string `json:"ca,omitempty"`
	Relay    string `json:"relay,omitempty"`
	Ticket   string `json:"ticket,omitempty"`
	Cluster  string `json:"cluster,omitempty"`
	Pod      string `json:"pod,omitempty"`
	Preamble []byte `json:"preamble,omitempty"`
	Head     []byte `json:"head,omitempty"`
	Status   int    `json:"status,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Sent     int64  `json:"sent,omitempty"`
	Received int64  `json:"received,omitempty"`
}

// domainTLS is one Domain's end-to-end TLS: the server side (its session-ticket keys let peers
// resume) and, per peer cluster, a client side with the sessions it resumes.
type domainTLS struct {
	name    string
	cert    tls.Certificate
	roots   *x509.CertPool
	server  *tls.Config
	mu      sync.Mutex
	clients map[string]*tls.Config
}

// verifyPeer accepts only a certificate of role `domain` for this Domain, signed by the hub CA,
// of the cluster the hub named for the other end (hub-link.ts does the same in Node).
func (d *domainTLS) verifyPeer(cs tls.ConnectionState, cluster string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the peer sent no certificate")
	}
	leaf := cs.PeerCertificates[0]
	intermediates := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: d.roots, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("the peer's certificate: %v", err)
	}
	if len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "domain" || leaf.Subject.CommonName != d.name {
		return fmt.Errorf("the peer's certificate is not Domain %s's", d.name)
	}
	if len(leaf.Subject.OrganizationalUnit) != 1 || leaf.Subject.OrganizationalUnit[0] != cluster {
		ou := "(none)"
		if len(leaf.Subject.OrganizationalUnit) > 0 {
			ou = leaf.Subject.OrganizationalUnit[0]
		}
		return fmt.Errorf("the peer's certificate is for cluster %s, the hub routed the stream to cluster %s", ou, cluster)
	}
	return nil
}

func newDomainTLS(m *dataMsg) (*domainTLS, error) {
	cert, err := tls.X509KeyPair([]byte(m.Cert), []byte(m.KeyPem))
	if err != nil {
		return nil, fmt.Errorf("Domain %s: %v", m.Domain, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(m.CA)) {
		return nil, fmt.Errorf("Domain %s: no CA certificate", m.Domain)
	}
	d := &domainTLS{name: m.Domain, cert: cert, roots: roots, clients: map[string]*tls.Config{}}
	d.server = &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS13,
		// Verified by verifyPeer once the handshake is done: the cluster differs per stream.
		ClientAuth: tls.RequireAnyClientCert,
	}
	return d, nil
}

// client is the TLS client side toward a peer cluster; its session cache is that cluster's.
func (d *domainTLS) client(cluster string) *tls.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.clients[cluster]; c != nil {
		return c
	}
	if len(d.clients) >= maxPeerConfigs {
		clear(d.clients)
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{d.cert},
		MinVersion:   tls.VersionTLS13,
		ServerName:   d.name + ".domain",
		// The hub CA and the peer's Domain, role and cluster are checked in VerifyConnection,
		// which runs on resumed sessions too; there is no DNS name to check.
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return d.verifyPeer(cs, cluster) },
		ClientSessionCache: tls.NewLRUClientSessionCache(256),
	}
	d.clients[cluster] = c
	return c
}

// flow is one connection in this process, from its first message to its end.
type flow struct {
	id       uint64
	cancel   context.CancelFunc
	answer   chan dataMsg
	sent     atomic.Int64
	received atomic.Int64
	reported [2]int64
}

type dataPlane struct {
	channel *os.File
	writeMu sync.Mutex
	mu      sync.Mutex
	domains map[string]*domainTLS
	flows   map[uint64]*flow
}

func (p *dataPlane) send(m dataMsg) {
	data, _ := json.Marshal(m)
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if _, err := p.channel.Write(append(data, '\n')); err != nil {
		jsonLog("error", "nodeserver channel lost", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
}

func (p *dataPlane) start(id uint64) (*flow, context.Context) {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	f := &flow{id: id, cancel: cancel, answer: make(chan dataMsg, 1)}
	p.mu.Lock()
	p.flows[id] = f
	p.mu.Unlock()
	return f, ctx
}

func (p *dataPlane) end(f *flow) {
	f.cancel()
	p.mu.Lock()
	delete(p.flows, f.id)
	sent, received := f.sent.Load()-f.reported[0], f.received.Load()-f.reported[1]
	f.reported = [2]int64{f.sent.Load(), f.received.Load()}
	p.mu.Unlock()
	p.send(dataMsg{Op: "done", ID: f.id, Sent: sent, Received: received})
}

func (p *dataPlane) domain(name string) (*domainTLS, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.domains[name]; d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("no credentials for Domain %s", name)
}

// dialRelay opens the plain connection to the hub's relay port that presents `ticket`.
func dialRelay(ctx context.Context, address, ticket string) (*net.TCPConn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("hub relay %s: %v", address, err)
	}
	tcp := conn.(*net.TCPConn)
	tcp.SetNoDelay(true)
	if _, err := tcp.Write([]byte(ticket + "\n")); err != nil {
		tcp.Close()
		return nil, fmt.Errorf("hub relay %s: %v", address, err)
	}
	return tcp, nil
}

// handshake runs TLS until done or ctx ends (a cancel, the timeout); crypto/tls closes the
// connection when ctx ends first.
func handshake(ctx context.Context, conn *tls.Conn) error {
	return conn.HandshakeContext(ctx)
}

// dial is the source's end: the sidecar's socket (handed over after its CONNECT), end-to-end TLS
// as client to the target's nodeserver, then the copy. Refusals are the nodeserver's to word.
func (p *dataPlane) dial(m *dataMsg, fd int) {
	file := os.NewFile(uintptr(fd), "sidecar")
	side, err := net.FileConn(file)
	file.Close()
	f, ctx := p.start(m.ID)
	if err != nil {
		p.send(dataMsg{Op: "fail", ID: m.ID, Reason: err.Error()})
		p.end(f)
		return
	}
	fail := func(err error) {
		p.send(dataMsg{Op: "fail", ID: m.ID, Reason: err.Error()})
		select {
		case a := <-f.answer:
			refuse(side, a.Status, a.Reason)
		case <-time.After(handshakeTimeout):
			side.Close()
		}
		p.end(f)
	}
	d, err := p.domain(m.Domain)
	if err != nil {
		fail(err)
		return
	}
	raw, err := dialRelay(ctx, m.Relay, m.Ticket)
	if err != nil {
		fail(err)
		return
	}
	conn := tls.Client(raw, d.client(m.Cluster))
	if err := handshake(ctx, conn); err != nil {
		raw.Close()
		fail(err)
		return
	}
	if _, err := side.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		conn.Close()
		side.Close()
		p.end(f)
		return
	}
	if len(m.Head) > 0 {
		if _, err := conn.Write(m.Head); err != nil {
			conn.Close()
			side.Close()
			p.end(f)
			return
		}
		f.sent.Add(int64(len(m.Head)))
	}
	p.send(dataMsg{Op: "up", ID: m.ID})
	p.copy(f, side, conn)
	p.end(f)
}

func refuse(side net.Conn, status int, reason string) {
	text := map[int]string{403: "Forbidden", 404: "Not Found", 502: "Bad Gateway", 503: "Service Unavailable"}[status]
	if text == "" {
		text = "Error"
	}
	side.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(side, "HTTP/1.1 %d %s\r\nrlark-reason: %s\r\nconnection: close\r\n\r\n", status, text, sanitize(reason))
	if u, ok := side.(*net.UnixConn); ok {
		u.CloseWrite()
	}
	// Read on until the sidecar closes: closing with its bytes unread would reset the answer.
	io.Copy(io.Discard, side)
	side.Close()
}

// sanitize keeps a reason on one header line.
func sanitize(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\r' || r == '\n' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

// serve is the target's end: dial the pod's inbound port (PROXY line and ticket first), join the
// relay with the ticket, and serve end-to-end TLS to the source's nodeserver.
func (p *dataPlane) serve(m *dataMsg) {
	f, ctx := p.start(m.ID)
	fail := func(err error) {
		p.send(dataMsg{Op: "fail", ID: m.ID, Reason: err.Error()})
		p.end(f)
	}
	d, err := p.domain(m.Domain)
	if err != nil {
		fail(err)
		return
	}
	podConn, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", m.Pod)
	if err != nil {
		fail(err)
		return
	}
	pod := podConn.(*net.TCPConn)
	pod.SetNoDelay(true)
	if _, err := pod.Write(m.Preamble); err != nil {
		pod.Close()
		fail(err)
		return
	}
	raw, err := dialRelay(ctx, m.Relay, m.Ticket)
	if err != nil {
		pod.Close()
		fail(err)
		return
	}
	p.send(dataMsg{Op: "dialed", ID: m.ID})
	conn := tls.Server(raw, d.server)
	err = handshake(ctx, conn)
	if err == nil {
		err = d.verifyPeer(conn.ConnectionState(), m.Cluster)
	}
	if err != nil {
		raw.Close()
		pod.Close()
		fail(err)
		return
	}
	p.send(dataMsg{Op: "up", ID: m.ID})
	p.copy(f, pod, conn)
	p.end(f)
}

// copy runs both ways with half-close: the end of one side's bytes ends the other's writing (a
// TLS close_notify, or a shutdown of the pod's socket); an error takes both down.
func (p *dataPlane) copy(f *flow, side net.Conn, conn *tls.Conn) {
	done := make(chan struct{}, 2)
	var failed atomic.Bool
	pump := func(dst io.Writer, src io.Reader, count *atomic.Int64, closeWrite func() error) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, copyBuffer)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					failed.Store(true)
					side.Close()
					conn.Close()
					return
				}
				count.Add(int64(n))
			}
			if err == io.EOF {
				closeWrite()
				return
			}
			if err != nil {
				failed.Store(true)
				side.Close()
				conn.Close()
				return
			}
		}
	}
	sideCloseWrite := func() error {
		if c, ok := side.(interface{ CloseWrite() error }); ok {
			return c.CloseWrite()
		}
		return side.Close()
	}
	go pump(conn, side, &f.sent, conn.CloseWrite)
	go pump(side, conn, &f.received, sideCloseWrite)
	<-done
	<-done
	side.Close()
	conn.Close()
}

// report tells the nodeserver the bytes each connection moved since the last report.
func (p *dataPlane) report() {
	for range time.Tick(reportInterval) {
		var out []dataMsg
		p.mu.Lock()
		for id, f := range p.flows {
			s, r := f.sent.Load(), f.received.Load()
			if s != f.reported[0] || r != f.reported[1] {
				out = append(out, dataMsg{Op: "bytes", ID: id, Sent: s - f.reported[0], Received: r - f.reported[1]})
				f.reported = [2]int64{s, r}
			}
		}
		p.mu.Unlock()
		for _, m := range out {
			p.send(m)
		}
	}
}

func (p *dataPlane) apply(m *dataMsg, fds *[]int) {
	if m.Cmd != "" {
		if m.Cmd != "NODE_HANDLE" || m.Msg == nil {
			return
		}
		if len(*fds) == 0 {
			jsonLog("error", "a handle message came without its descriptor", nil)
			os.Exit(1)
		}
		fd := (*fds)[0]
		*fds = (*fds)[1:]
		// Node holds its copy until this: then it closes it and sends the next handle.
		p.send(dataMsg{Cmd: "NODE_HANDLE_ACK"})
		if m.Msg.Op != "dial" {
			syscall.Close(fd)
			return
		}
		go p.dial(m.Msg, fd)
		return
	}
	switch m.Op {
	case "domain":
		d, err := newDomainTLS(m)
		if err != nil {
			jsonLog("error", "bad credentials", map[string]any{"error": err.Error()})
			return
		}
		p.mu.Lock()
		p.domains[m.Domain] = d
		p.mu.Unlock()
	case "forget":
		p.mu.Lock()
		delete(p.domains, m.Domain)
		p.mu.Unlock()
	case "serve":
		go p.serve(m)
	case "answer", "cancel":
		p.mu.Lock()
		f := p.flows[m.ID]
		p.mu.Unlock()
		if f == nil {
			return
		}
		if m.Op == "cancel" {
			f.cancel()
			return
		}
		select {
		case f.answer <- *m:
		default:
		}
	}
}

// readChannel reads the IPC channel: JSON lines, with the descriptors of NODE_HANDLE messages
// arriving as SCM_RIGHTS in the order of those messages.
func (p *dataPlane) readChannel(fd int) {
	buf := make([]byte, 64*1024)
	oob := make([]byte, syscall.CmsgSpace(4*16))
	var pending []byte
	var fds []int
	for {
		n, oobn, _, _, err := syscall.Recvmsg(fd, buf, oob, 0)
		if err == syscall.EINTR || err == syscall.EAGAIN {
			if err == syscall.EAGAIN {
				waitReadable(fd)
			}
			continue
		}
		if err != nil || n == 0 {
			jsonLog("info", "nodeserver channel closed", nil)
			os.Exit(0)
		}
		if oobn > 0 {
			messages, _ := syscall.ParseSocketControlMessage(oob[:oobn])
			for _, cm := range messages {
				if got, err := syscall.ParseUnixRights(&cm); err == nil {
					for _, f := range got {
						syscall.CloseOnExec(f)
					}
					fds = append(fds, got...)
				}
			}
		}
		pending = append(pending, buf[:n]...)
		for {
			end := -1
			for i, b := range pending {
				if b == '\n' {
					end = i
					break
				}
			}
			if end < 0 {
				break
			}
			var m dataMsg
			if err := json.Unmarshal(pending[:end], &m); err != nil {
				jsonLog("error", "bad message on the nodeserver channel", map[string]any{"error": err.Error()})
				os.Exit(1)
			}
			pending = pending[end+1:]
			p.apply(&m, &fds)
		}
		if len(pending) > maxDataMsg {
			jsonLog("error", "message too long on the nodeserver channel", nil)
			os.Exit(1)
		}
	}
}

// waitReadable blocks until fd has something to read (the channel may be non-blocking).
func waitReadable(fd int) {
	var set syscall.FdSet
	set.Bits[fd/64] |= 1 << (uint(fd) % 64)
	syscall.Select(fd+1, &set, nil, nil, nil)
}

func runNodeserverData() {
	channelFd, err := strconv.Atoi(os.Getenv("NODE_CHANNEL_FD"))
	if err != nil {
		fail("nodeserver-data runs under the nodeserver, which gives it NODE_CHANNEL_FD")
	}
	if mode := os.Getenv("NODE_CHANNEL_SERIALIZATION_MODE"); mode != "" && mode != "json" {
		fail("nodeserver-data speaks the json serialization, not %q", mode)
	}
	logComponent = "rlark-net nodeserver-data"
	syscall.SetNonblock(channelFd, false)
	p := &dataPlane{
		channel: os.NewFile(uintptr(channelFd), "nodeserver"),
		domains: map[string]*domainTLS{},
		flows:   map[uint64]*flow{},
	}
	go p.report()
	p.send(dataMsg{Op: "ready"})
	p.readChannel(channelFd)
}
