// The SSH front's hop data port and the agent's access-hop against it (`go test ./...` in this
// directory): a ticket the hub issued, presented inside TLS by an agent of its cluster, is taken
// once and joined; a replayed, forged or foreign one, or a client certificate of another role,
// is refused with its reason reported on the control socket; the agent side refuses a data port
// whose certificate is not the hub's.
package main

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

type testPKI struct {
	ca    *x509.Certificate
	caKey *rsa.PrivateKey
	caPem []byte
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &testPKI{ca: ca, caKey: key, caPem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns PEMs of a certificate (subject O=role, OU=cluster, CN=name) and its key.
func (p *testPKI) issue(t *testing.T, role, name, cluster string) (certPem, keyPem []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	subject := pkix.Name{CommonName: name, Organization: []string{role}}
	if cluster != "" {
		subject.OrganizationalUnit = []string{cluster}
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testFront is a front with only its hop data port, its control lines read by the test.
func testFront(t *testing.T, p *testPKI) (*front, net.Listener, *bufio.Scanner) {
	t.Helper()
	dir := t.TempDir()
	hubCert, hubKey := p.issue(t, "hub", "hub", "")
	ours, theirs := net.Pipe()
	f := &front{control: ours, waiting: map[uint64]chan frontMsg{}, conns: map[uint64]*ssh.ServerConn{}, cuts: map[string]func(){}, tickets: map[string]*hopTicket{}, held: map[string]*hopHeld{}}
	ln, err := f.hopListen("127.0.0.1:0", writeFile(t, dir, "hub.crt", hubCert), writeFile(t, dir, "hub.key", hubKey), writeFile(t, dir, "ca.crt", p.caPem))
	if err != nil {
		t.Fatal(err)
	}
	go f.serveHops(ln)
	t.Cleanup(func() { ln.Close(); ours.Close(); theirs.Close() })
	return f, ln, bufio.NewScanner(theirs)
}

// present dials the data port as an agent and sends `ticket`; returns what the port answered.
func present(t *testing.T, addr string, p *testPKI, certPem, keyPem []byte, ticket string) string {
	t.Helper()
	h := &accessHop{pairs: map[uint64]func(){}}
	if err := h.identity(hopMsg{CA: string(p.caPem), Cert: string(certPem), Key: string(keyPem)}); err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", addr, h.tls)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte(ticket + "\n"))
	answer := make([]byte, 3)
	n, _ := conn.Read(answer)
	return string(answer[:n])
}

func nextReport(t *testing.T, control *bufio.Scanner) frontMsg {
	t.Helper()
	if !control.Scan() {
		t.Fatal("the control socket closed")
	}
	var m frontMsg
	json.Unmarshal(control.Bytes(), &m)
	return m
}

func TestHopTickets(t *testing.T) {
	p := newTestPKI(t)
	f, ln, control := testFront(t, p)
	agentCert, agentKey := p.issue(t, "agent", "local", "local")
	ticket := strings.Repeat("ab", 16)
	f.expect(frontMsg{Op: "expect", Ticket: ticket, Cluster: "local"})

	if got := present(t, ln.Addr().String(), p, agentCert, agentKey, ticket); got != "ok\n" {
		t.Fatalf("a valid ticket: answered %q", got)
	}
	if f.takeHop(ticket) == nil {
		t.Fatal("the accepted connection is not held for the hub's answer")
	}

	refusals := []struct {
		what, role, cluster, ticket, reason string
		issued                              bool
	}{
		{"replayed", "agent", "local", ticket, "unknown or used ticket", false},
		{"forged", "agent", "local", strings.Repeat("cd", 16), "unknown or used ticket", false},
		{"another cluster's agent", "agent", "other", strings.Repeat("ef", 16), "client certificate is for another cluster than the ticket's", true},
		{"a certificate of role hub", "hub", "local", strings.Repeat("01", 16), "client certificate is not an agent's", true},
	}
	for _, r := range refusals {
		if r.issued {
			f.expect(frontMsg{Op: "expect", Ticket: r.ticket, Cluster: "local"})
		}
		cert, key := p.issue(t, r.role, "x", r.cluster)
		// The report is written before the connection closes: read it while the dial waits.
		reports := make(chan frontMsg, 1)
		go func() { reports <- nextReport(t, control) }()
		if got := present(t, ln.Addr().String(), p, cert, key, r.ticket); got != "" {
			t.Fatalf("%s: answered %q", r.what, got)
		}
		if m := <-reports; m.Op != "hop-refused" || m.Reason != r.reason {
			t.Fatalf("%s: reported %+v, want reason %q", r.what, m, r.reason)
		}
	}
}

func TestHopRefusesAnImpostorHub(t *testing.T) {
	p := newTestPKI(t)
	other := newTestPKI(t)
	// A data port whose certificate another CA signed (a stolen address, not the hub's key).
	_, ln, _ := testFront(t, other)
	agentCert, agentKey := p.issue(t, "agent", "local", "local")
	h := &accessHop{pairs: map[uint64]func(){}}
	if err := h.identity(hopMsg{CA: string(p.caPem), Cert: string(agentCert), Key: string(agentKey)}); err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", ln.Addr().String(), h.tls)
	if err == nil {
		conn.Close()
		t.Fatal("the agent's hop finished TLS with a data port its CA did not sign")
	}
}
