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
//	from the hub  {"op":"key","id":N,"ok":true|false}
//	              {"op":"open","id":N,"stream":S}       granted: dial the data socket, send S
//	              {"op":"open","id":N,"error":E}        refused (files: E on stderr, exit 1)
//	              {"op":"end","conn":C}                 close the connection
//	              {"op":"cut","stream":S}               close that channel now (access ended)
package main

import (
	"bufio"
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
)

type frontMsg struct {
	Op     string `json:"op"`
	ID     uint64 `json:"id,omitempty"`
	Conn   uint64 `json:"conn,omitempty"`
	Login  string `json:"login,omitempty"`
	Algo   string `json:"algo,omitempty"`
	Key    string `json:"key,omitempty"`
	Remote string `json:"remote,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Host   string `json:"host,omitempty"`
	Port   uint32 `json:"port,omitempty"`
	Verb   string `json:"verb,omitempty"`
	Target string `json:"target,omitempty"`
	Reason string `json:"reason,omitempty"`
	OK     bool   `json:"ok,omitempty"`
	Stream string `json:"stream,omitempty"`
	Error  string `json:"error,omitempty"`
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
	f := &front{control: control, dataPath: *dataPath, waiting: map[uint64]chan frontMsg{}, conns: map[uint64]*ssh.ServerConn{}, cuts: map[string]func(){}}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		jsonLog("error", "listen", map[string]any{"error": err.Error(), "address": *listen})
		os.Exit(1)
	}
	go f.readControl()
	f.send(frontMsg{Op: "hello", Port: uint32(ln.Addr().(*net.TCPAddr).Port)})
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
	f.join(a.Stream, ch, data, false)
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
	f.join(a.Stream, ch, data, true)
}

// join copies both ways until both have ended, or either fails (then both close at once). The
// hub ends its side cleanly after the agent's last byte (a subsystem then gets exit status 0
// before its EOF, as OpenSSH's do: scp fails without one); it closes it abruptly to cut the
// access (revocation, limits), which here closes the channel.
func (f *front) join(stream string, ch ssh.Channel, data *net.UnixConn, subsystem bool) {
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
	done := make(chan struct{}, 2)
	go func() {
		// user -> hub
		if _, err := io.Copy(data, ch); err != nil {
			cut()
		} else {
			data.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		// hub -> user
		_, err := io.Copy(ch, data)
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
