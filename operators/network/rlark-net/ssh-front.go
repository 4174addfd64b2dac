// rlark-net ssh-front: the byte path of the bastion's user logins (ADR 0011, second decision). The
// hub starts it and restarts it; it decides nothing. It terminates OpenSSH clients' connections
// (golang.org/x/crypto/ssh, AES-GCM only, the hub's host key) and asks the hub's TypeScript, on a
// control socket, about every key offered and every channel opened; a granted channel's bytes go
// to the hub on a unix socket of their own (one per channel, its first line the stream id the hub
// gave), where the hub counts them, holds them to the user's byte rate and relays them to the
// pod's agent. Served: SFTP (the `sftp` subsystem, scp's default mode) and `ssh -L`
// (direct-tcpip). Everything else is refused, and the refusals the hub audits are reported.
//
// Control socket (the hub listens, this process dials; its life is this process's life), JSON
// lines of at most maxFrontLine:
//
//	to the hub    {"op":"hello","port":P}
//	              {"op":"key","id":N,"conn":C,"login":L,"algo":A,"key":B64,"remote":IP}
//	              {"op":"login","conn":C,"login":L,"algo":A,"key":B64,"remote":IP}  authenticated
//	              {"op":"open","id":N,"conn":C,"kind":"files"|"forward","host":H,"port":P}
//	              {"op":"refused","conn":C,"verb":V,"target":T,"reason":R}
//	              {"op":"closed","conn":C}
//	              {"op":"bytes","ticket":T,"in":I,"out":O}  a hop's bytes since the last report
//	              {"op":"hop-refused","reason":R}        a data-port connection refused
//	from the hub  {"op":"key","id":N,"ok":true|false}
//	              {"op":"open","id":N,"stream":S}       granted: dial the data socket, send S
//	              {"op":"open","id":N,"ticket":T}       granted over the agent's hop: join T's
//	                                                    data-port connection
//	              {"op":"expect","ticket":T,"cluster":K} the agent of K will bring T (single use)
//	              {"op":"forget","ticket":T}            it will not
//	              {"op":"open","id":N,"error":E}        refused (files: E on stderr, exit 1)
//	              {"op":"end","conn":C}                 close the connection
//	              {"op":"cut","stream":S}               close that channel now (access ended;
//	                                                    S is the ticket for a hop)
//
// The agent's hop (ADR 0011, third decision; --hop-listen): a TLS 1.3 data port where the agent's
// `rlark-net access-hop` brings, for a forward the hub granted, the ticket the hub gave it on its
// tunnel. The port presents the hub's certificate (role hub, over the host key) and takes only a
// client certificate of role agent signed by the hub CA, for the cluster the ticket was issued
// to. A ticket is 128 random bits, single use, valid hopTicketTTL; an unknown (or replayed),
// expired or foreign one is refused, reported and counted. The joined channel's bytes are counted
// here and reported to the hub, which keeps the access (audit, idle time, revocation by `cut`).
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

const (
	maxFrontLine = 4096
	// Connections at once, and channels per connection: beyond them new ones are refused.
	maxFrontConns    = 4096
	maxFrontChannels = 64
	// A client has this long from TCP accept to the end of authentication.
	frontHandshake = 20 * time.Second
	// The hub answers every question within this, or the question is refused.
	frontAnswer = 30 * time.Second
	// Requests the session channel accepts before its subsystem (pty, env): anything past this
	// many ends the channel.
	maxSessionRequests = 16
	// A hop ticket is valid this long after the hub issued it (the agent dials at once).
	hopTicketTTL = 10 * time.Second
	// A data-port connection has this long to finish TLS and send its ticket.
	hopHandshake = 10 * time.Second
	// A joined hop reports its bytes to the hub this often (the hub's idle time reads them).
	hopReportEvery = time.Second
)

type frontMsg struct {
	Op      string `json:"op"`
	ID      uint64 `json:"id,omitempty"`
	Conn    uint64 `json:"conn,omitempty"`
	Login   string `json:"login,omitempty"`
	Algo    string `json:"algo,omitempty"`
	Key     string `json:"key,omitempty"`
	Remote  string `json:"remote,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Host    string `json:"host,omitempty"`
	Port    uint32 `json:"port,omitempty"`
	Verb    string `json:"verb,omitempty"`
	Target  string `json:"target,omitempty"`
	Reason  string `json:"reason,omitempty"`
	OK      bool   `json:"ok,omitempty"`
	Stream  string `json:"stream,omitempty"`
	Error   string `json:"error,omitempty"`
	Ticket  string `json:"ticket,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	In      int64  `json:"in,omitempty"`
	Out     int64  `json:"out,omitempty"`
}

// hopTicket is a ticket the hub issued, waiting for its agent's data connection.
type hopTicket struct {
	cluster string
	expires time.Time
	conn    chan *tls.Conn
}

type front struct {
	control  net.Conn
	sendMu   sync.Mutex
	dataPath string
	nextID   atomic.Uint64
	mu       sync.Mutex
	waiting  map[uint64]chan frontMsg
	conns    map[uint64]*ssh.ServerConn
	cuts     map[string]func()
	open     atomic.Int64
	// The agent hop's data port: nil when off.
	hop      *tls.Config
	hopRoots *x509.CertPool
	tickets  map[string]*hopTicket
	held     map[string]*hopHeld
	hopOpen  atomic.Int64
}

func (f *front) send(m frontMsg) {
	data, _ := json.Marshal(m)
	if len(data) >= maxFrontLine {
		jsonLog("warn", "control line too long, not sent", map[string]any{"op": m.Op})
		return
	}
	f.sendMu.Lock()
	defer f.sendMu.Unlock()
	f.control.Write(append(data, '\n'))
}

// ask sends a question and waits for its answer; none in time (or the hub gone) is a refusal.
func (f *front) ask(m frontMsg) (frontMsg, bool) {
	id := f.nextID.Add(1)
	m.ID = id
	answer := make(chan frontMsg, 1)
	f.mu.Lock()
	f.waiting[id] = answer
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.waiting, id)
		f.mu.Unlock()
	}()
	f.send(m)
	select {
	case a := <-answer:
		return a, true
	case <-time.After(frontAnswer):
		return frontMsg{}, false
	}
}

// readControl delivers the hub's answers; the process ends with the control socket.
func (f *front) readControl() {
	scanner := bufio.NewScanner(f.control)
	scanner.Buffer(make([]byte, maxFrontLine), maxFrontLine)
	for scanner.Scan() {
		var m frontMsg
		if err := json.Unmarshal(scanner.Bytes(), &m); err != nil {
			jsonLog("error", "bad control line from the hub", map[string]any{"error": err.Error()})
			break
		}
		if m.Op == "cut" {
			f.mu.Lock()
			cut := f.cuts[m.Stream]
			f.mu.Unlock()
			if cut != nil {
				cut()
			}
			continue
		}
		if m.Op == "expect" || m.Op == "forget" {
			f.expect(m)
			continue
		}
		if m.Op == "end" {
			f.mu.Lock()
			c := f.conns[m.Conn]
			f.mu.Unlock()
			if c != nil {
				c.Close()
			}
			continue
		}
		f.mu.Lock()
		answer := f.waiting[m.ID]
		f.mu.Unlock()
		if answer != nil {
			select {
			case answer <- m:
			default:
			}
		}
	}
	jsonLog("error", "control socket closed: exiting", nil)
	os.Exit(1)
}

func runSSHFront() {
	fs := flag.NewFlagSet("ssh-front", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "host:port for users' SSH connections")
	controlPath := fs.String("control", "", "the hub's control socket")
	dataPath := fs.String("data", "", "the hub's data socket")
	hostKeyPath := fs.String("host-key", "", "PEM of the SSH host key")
	hopListen := fs.String("hop-listen", "", "host:port of the agents' TLS data port (off when empty)")
	hopCert := fs.String("hop-cert", "", "PEM of the hub's certificate over the host key")
	hopCA := fs.String("hop-ca", "", "PEM of the hub CA (agents' certificates)")
	fs.Parse(os.Args[2:])
	logComponent = "rlark-net ssh-front"
	if *controlPath == "" || *dataPath == "" || *hostKeyPath == "" {
		jsonLog("error", "--control, --data and --host-key are required", nil)
		os.Exit(2)
	}
	pem, err := os.ReadFile(*hostKeyPath)
	if err != nil {
		jsonLog("error", "host key unreadable", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		jsonLog("error", "host key does not parse", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	control, err := net.Dial("unix", *controlPath)
	if err != nil {
		jsonLog("error", "control socket", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	f := &front{control: control, dataPath: *dataPath, waiting: map[uint64]chan frontMsg{}, conns: map[uint64]*ssh.ServerConn{}, cuts: map[string]func(){}, tickets: map[string]*hopTicket{}, held: map[string]*hopHeld{}}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		jsonLog("error", "listen", map[string]any{"error": err.Error(), "address": *listen})
		os.Exit(1)
	}
	hello := frontMsg{Op: "hello", Port: uint32(ln.Addr().(*net.TCPAddr).Port)}
	if *hopListen != "" {
		hopLn, err := f.hopListen(*hopListen, *hopCert, *hostKeyPath, *hopCA)
		if err != nil {
			jsonLog("error", "hop data port", map[string]any{"error": err.Error(), "address": *hopListen})
			os.Exit(1)
		}
		hello.Target = hopLn.Addr().String()
		go f.serveHops(hopLn)
	}
	go f.readControl()
	f.send(hello)
	jsonLog("info", "listening", map[string]any{"address": ln.Addr().String()})
	var connID atomic.Uint64
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if f.open.Add(1) > maxFrontConns {
			f.open.Add(-1)
			c.Close()
			continue
		}
		go func() {
			defer f.open.Add(-1)
			f.serve(c, connID.Add(1), signer)
		}()
	}
}

func remoteHost(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

func (f *front) serve(c net.Conn, id uint64, signer ssh.Signer) {
	defer c.Close()
	remote := remoteHost(c)
	config := &ssh.ServerConfig{
		Config: ssh.Config{
			Ciphers: []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"},
			MACs:    []string{"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com"},
		},
		MaxAuthTries: 6,
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			blob := base64.StdEncoding.EncodeToString(key.Marshal())
			a, ok := f.ask(frontMsg{Op: "key", Conn: id, Login: meta.User(), Algo: key.Type(), Key: blob, Remote: remote})
			if !ok || !a.OK {
				return nil, errors.New("key refused")
			}
			return &ssh.Permissions{Extensions: map[string]string{"key": blob, "algo": key.Type()}}, nil
		},
		ServerVersion: "SSH-2.0-rlark",
	}
	config.AddHostKey(signer)
	c.SetDeadline(time.Now().Add(frontHandshake))
	conn, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	// The key the client proved it holds (it may have offered others first): the hub's record of
	// this connection, before any of its channels is asked about.
	f.send(frontMsg{Op: "login", Conn: id, Login: conn.User(), Algo: conn.Permissions.Extensions["algo"], Key: conn.Permissions.Extensions["key"], Remote: remote})
	f.mu.Lock()
	f.conns[id] = conn
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, id)
		f.mu.Unlock()
		f.send(frontMsg{Op: "closed", Conn: id})
	}()
	go func() {
		for r := range reqs {
			if r.Type == "tcpip-forward" {
				f.send(frontMsg{Op: "refused", Conn: id, Verb: "forward", Reason: "remote forwarding (-R) is not served"})
			}
			r.Reply(false, nil)
		}
	}()
	var channels atomic.Int64
	for nc := range chans {
		if channels.Add(1) > maxFrontChannels {
			channels.Add(-1)
			nc.Reject(ssh.ResourceShortage, "too many channels")
			continue
		}
		go func(nc ssh.NewChannel) {
			defer channels.Add(-1)
			switch nc.ChannelType() {
			case "direct-tcpip":
				f.forward(id, nc)
			case "session":
				f.session(id, nc)
			default:
				nc.Reject(ssh.UnknownChannelType, "not served")
			}
		}(nc)
	}
	conn.Wait()
}

func (f *front) forward(conn uint64, nc ssh.NewChannel) {
	var p struct {
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
		nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
		return
	}
	a, ok := f.ask(frontMsg{Op: "open", Conn: conn, Kind: "forward", Host: p.Host, Port: p.Port})
	if ok && a.Ticket != "" {
		// Over the agent's hop: its connection is here already (the agent answered the hub only
		// once the front had taken its ticket), or comes within the ticket's time.
		hop := f.takeHop(a.Ticket)
		if hop == nil {
			nc.Reject(ssh.ConnectionFailed, "")
			return
		}
		ch, reqs, err := nc.Accept()
		if err != nil {
			hop.Close()
			return
		}
		go ssh.DiscardRequests(reqs)
		f.join(a.Ticket, ch, hop, false, true)
		return
	}
	if !ok || a.Stream == "" {
		nc.Reject(ssh.Prohibited, "")
		return
	}
	data, err := f.dial(a.Stream)
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, "")
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		data.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	f.join(a.Stream, ch, data, false, false)
}

func (f *front) dial(stream string) (*net.UnixConn, error) {
	c, err := net.Dial("unix", f.dataPath)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte(stream + "\n")); err != nil {
		c.Close()
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

var legacyScp = func(command string) bool {
	t := strings.TrimLeft(command, " \t")
	return t == "scp" || strings.HasPrefix(t, "scp ") || strings.HasPrefix(t, "scp\t")
}

func (f *front) session(conn uint64, nc ssh.NewChannel) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	for n := 0; n < maxSessionRequests; n++ {
		r, more := <-reqs
		if !more {
			ch.Close()
			return
		}
		switch r.Type {
		case "pty-req", "window-change":
			r.Reply(true, nil)
		case "x11-req":
			r.Reply(false, nil)
			f.send(frontMsg{Op: "refused", Conn: conn, Verb: "shell", Reason: "X11 forwarding is not served"})
		case "auth-agent-req@openssh.com":
			r.Reply(false, nil)
			f.send(frontMsg{Op: "refused", Conn: conn, Verb: "shell", Reason: "agent forwarding is not served"})
		case "subsystem":
			var s struct{ Name string }
			if ssh.Unmarshal(r.Payload, &s) != nil || s.Name != "sftp" {
				r.Reply(false, nil)
				continue
			}
			r.Reply(true, nil)
			f.files(conn, ch, reqs)
			return
		case "exec":
			var s struct{ Command string }
			ssh.Unmarshal(r.Payload, &s)
			// Accepted, then answered as the ssh2 port answers a refusal: a line and status 1.
			r.Reply(true, nil)
			if legacyScp(s.Command) {
				f.send(frontMsg{Op: "refused", Conn: conn, Verb: "files", Reason: "legacy scp (-O) is not served; scp's default SFTP mode is"})
			}
			ch.Stderr().Write([]byte("rlark: this port serves SFTP and port forwarding; shells and commands are on the hub's SSH port\r\n"))
			exit(ch, 1)
			return
		case "shell":
			r.Reply(true, nil)
			ch.Stderr().Write([]byte("rlark: this port serves SFTP and port forwarding; shells and commands are on the hub's SSH port\r\n"))
			exit(ch, 1)
			return
		default:
			r.Reply(false, nil)
		}
	}
	ch.Close()
}

func exit(ch ssh.Channel, status uint32) {
	payload := make([]byte, 4)
	binary.BigEndian.PutUint32(payload, status)
	ch.SendRequest("exit-status", false, payload)
	ch.CloseWrite()
	ch.Close()
}

func (f *front) files(conn uint64, ch ssh.Channel, reqs <-chan *ssh.Request) {
	go ssh.DiscardRequests(reqs)
	a, ok := f.ask(frontMsg{Op: "open", Conn: conn, Kind: "files"})
	if ok && a.Ticket != "" {
		hop := f.takeHop(a.Ticket)
		if hop == nil {
			ch.Stderr().Write([]byte("rlark: the agent's data connection did not come\r\n"))
			exit(ch, 1)
			return
		}
		f.join(a.Ticket, ch, hop, true, true)
		return
	}
	if !ok || a.Stream == "" {
		message := a.Error
		if !ok {
			message = "the hub did not answer"
		}
		ch.Stderr().Write([]byte("rlark: " + message + "\r\n"))
		exit(ch, 1)
		return
	}
	data, err := f.dial(a.Stream)
	if err != nil {
		ch.Stderr().Write([]byte("rlark: the hub's data socket: " + err.Error() + "\r\n"))
		exit(ch, 1)
		return
	}
	f.join(a.Stream, ch, data, true, false)
}

// join copies both ways until both have ended, or either fails (then both close at once). The
// hub ends its side cleanly after the agent's last byte (a subsystem then gets exit status 0
// before its EOF, as OpenSSH's do: scp fails without one); it closes it abruptly to cut the
// access (revocation, limits), which here closes the channel.
func (f *front) join(stream string, ch ssh.Channel, data halfCloser, subsystem, report bool) {
	var once sync.Once
	cut := func() {
		once.Do(func() {
			data.Close()
			ch.Close()
		})
	}
	f.mu.Lock()
	f.cuts[stream] = cut
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.cuts, stream)
		f.mu.Unlock()
	}()
	// A hop's bytes are counted here (no other process on this side sees them) and reported.
	var in, out atomic.Int64
	var toData io.Writer = data
	var toUser io.Writer = ch
	stopReports := make(chan struct{})
	if report {
		toData = &countingWriter{w: data, n: &in}
		toUser = &countingWriter{w: ch, n: &out}
		go f.reportBytes(stream, &in, &out, stopReports)
	}
	defer close(stopReports)
	done := make(chan struct{}, 2)
	go func() {
		// user -> hub
		if _, err := io.Copy(toData, ch); err != nil {
			cut()
		} else {
			data.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		// hub -> user
		_, err := io.Copy(toUser, data)
		if err != nil {
			cut()
		} else {
			if subsystem {
				ch.SendRequest("exit-status", false, []byte{0, 0, 0, 0})
			}
			ch.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	cut()
}

// halfCloser is a data connection the front joins to a channel: the hub's unix socket or an
// agent's TLS hop.
type halfCloser interface {
	io.ReadWriteCloser
	CloseWrite() error
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// reportBytes tells the hub a hop's bytes while it runs (each second something moved), and the
// rest with `hop-closed` once it has ended.
func (f *front) reportBytes(ticket string, in, out *atomic.Int64, stop chan struct{}) {
	var sentIn, sentOut int64
	tick := time.NewTicker(hopReportEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			i, o := in.Load(), out.Load()
			if i != sentIn || o != sentOut {
				f.send(frontMsg{Op: "bytes", Ticket: ticket, In: i - sentIn, Out: o - sentOut})
				sentIn, sentOut = i, o
			}
		case <-stop:
			f.send(frontMsg{Op: "hop-closed", Ticket: ticket, In: in.Load() - sentIn, Out: out.Load() - sentOut})
			return
		}
	}
}

func (f *front) hopListen(address, certPath, keyPath, caPath string) (net.Listener, error) {
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	caPem, err := os.ReadFile(caPath)
	if err != nil {
		return nil, err
	}
	f.hopRoots = x509.NewCertPool()
	if !f.hopRoots.AppendCertsFromPEM(caPem) {
		return nil, errors.New(caPath + ": no CA certificate")
	}
	f.hop = &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS13,
		// Verified against the hub CA, role and the ticket's cluster once the ticket is read.
		ClientAuth: tls.RequireAnyClientCert,
	}
	return net.Listen("tcp", address)
}

func (f *front) serveHops(ln net.Listener) {
	jsonLog("info", "hop data port listening", map[string]any{"address": ln.Addr().String()})
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if f.hopOpen.Add(1) > maxFrontConns {
			f.hopOpen.Add(-1)
			f.refuseHop("too many data connections")
			c.Close()
			continue
		}
		go func() {
			defer f.hopOpen.Add(-1)
			f.hopConn(c)
		}()
	}
}

func (f *front) refuseHop(reason string) {
	f.send(frontMsg{Op: "hop-refused", Reason: reason})
}

// agentOf checks an agent's client certificate: signed by the hub CA, role agent, of `cluster`.
func (f *front) agentOf(cs tls.ConnectionState, cluster string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	leaf := cs.PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: f.hopRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return errors.New("client certificate not signed by the hub CA")
	}
	if len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "agent" {
		return errors.New("client certificate is not an agent's")
	}
	if len(leaf.Subject.OrganizationalUnit) != 1 || leaf.Subject.OrganizationalUnit[0] != cluster {
		return errors.New("client certificate is for another cluster than the ticket's")
	}
	return nil
}

// hopConn takes one agent data connection: TLS, then its ticket line; nothing else is read from
// it until the hub has granted the channel it belongs to.
func (f *front) hopConn(raw net.Conn) {
	raw.SetDeadline(time.Now().Add(hopHandshake))
	conn := tls.Server(raw, f.hop)
	if err := conn.Handshake(); err != nil {
		raw.Close()
		f.refuseHop("TLS handshake failed")
		return
	}
	line := make([]byte, hopTicketLen+1)
	if _, err := io.ReadFull(conn, line); err != nil || line[hopTicketLen] != '\n' {
		conn.Close()
		f.refuseHop("no ticket")
		return
	}
	ticket := string(line[:hopTicketLen])
	f.mu.Lock()
	t := f.tickets[ticket]
	// Single use: gone from the map once presented, whatever follows.
	delete(f.tickets, ticket)
	f.mu.Unlock()
	if t == nil {
		conn.Close()
		f.refuseHop("unknown or used ticket")
		return
	}
	if time.Now().After(t.expires) {
		conn.Close()
		f.refuseHop("expired ticket")
		return
	}
	if err := f.agentOf(conn.ConnectionState(), t.cluster); err != nil {
		conn.Close()
		f.refuseHop(err.Error())
		return
	}
	if _, err := conn.Write([]byte("ok\n")); err != nil {
		conn.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	select {
	case t.conn <- conn:
	default:
		conn.Close()
	}
}

// expect records (or drops) a ticket the hub issued; an unused one expires after hopTicketTTL.
func (f *front) expect(m frontMsg) {
	if len(m.Ticket) != hopTicketLen {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.Op == "forget" {
		if held := f.held[m.Ticket]; held != nil {
			t := held.ticket
			delete(f.tickets, m.Ticket)
			delete(f.held, m.Ticket)
			select {
			case c := <-t.conn:
				c.Close()
			default:
			}
		}
		return
	}
	if f.hop == nil || len(f.tickets) >= maxFrontConns*maxFrontChannels {
		return
	}
	t := &hopTicket{cluster: m.Cluster, expires: time.Now().Add(hopTicketTTL), conn: make(chan *tls.Conn, 1)}
	f.tickets[m.Ticket] = t
	held := &hopHeld{ticket: t}
	f.held[m.Ticket] = held
	time.AfterFunc(hopTicketTTL, func() {
		f.mu.Lock()
		if f.tickets[m.Ticket] == t {
			delete(f.tickets, m.Ticket)
		}
		if f.held[m.Ticket] == held {
			delete(f.held, m.Ticket)
		}
		f.mu.Unlock()
		// Presented but never granted: closed, so nothing waits on it.
		select {
		case c := <-t.conn:
			c.Close()
		default:
		}
	})
}

// hopHeld keeps a presented ticket's connection reachable until the hub's answer takes it.
type hopHeld struct {
	ticket *hopTicket
}

// takeHop is the connection the agent brought for `ticket`, waiting for it within the ticket's
// time; nil when it did not come.
func (f *front) takeHop(ticket string) *tls.Conn {
	f.mu.Lock()
	held := f.held[ticket]
	delete(f.held, ticket)
	f.mu.Unlock()
	if held == nil {
		return nil
	}
	select {
	case c := <-held.ticket.conn:
		return c
	case <-time.After(time.Until(held.ticket.expires)):
		return nil
	}
}
