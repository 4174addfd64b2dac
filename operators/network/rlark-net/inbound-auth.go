// The check of the ticket that follows each PROXY line on :5700 (operators/network/inbound-auth.ts
// mints it; docs/networking.md "Who may reach :5700"):
//
//	RLARK-AUTH v1 <kid> <unix ms> <nonce> <mac>\r\n
//
// mac = hex of the first 16 bytes of HMAC-SHA256(pod key, "rlark-inbound v1\n" + PROXY line +
// "<kid> <unix ms> <nonce>"). The pod key is fetched from the nodeserver (GET /inbound_key) at
// start and again, at most once a second, when a ticket names a key id this sidecar does not hold
// (the Domain's key was rotated): the previous key stays good until then.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	ticketWindow = 10 * time.Second
	// Nonces of tickets still inside the window; beyond this many, streams are refused rather
	// than a nonce forgotten early (about 20,000 new streams a second to one pod).
	maxNonces = 200_000
	// "RLARK-AUTH v1 " + 8 + 1 + 13 + 1 + 32 + 1 + 32 + "\r\n", with room for a longer time.
	maxAuthLine = 128
)

type podKey struct {
	id  string
	key []byte
}

func keyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

type seenNonce struct {
	nonce  string
	expiry time.Time
}

// inboundAuth holds this pod's keys and the nonces it has accepted.
type inboundAuth struct {
	nodeserver, pod, podIP string

	mu          sync.Mutex
	keys        []podKey // newest first, at most two
	lastFetch   time.Time
	fetching    chan struct{}
	nonces      map[string]struct{}
	nonceOrder  []seenNonce
	refused     uint64
	lastLogged  time.Time
	unlogged    uint64
	fetchClient *http.Client
}

func newInboundAuth(nodeserver, pod, podIP string) *inboundAuth {
	a := &inboundAuth{nodeserver: nodeserver, pod: pod, podIP: podIP, nonces: map[string]struct{}{}}
	a.fetchClient = &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", nodeserver)
			},
			DisableKeepAlives: true,
		},
	}
	return a
}

// fetch asks the nodeserver for this pod's key and keeps it with the one before.
func (a *inboundAuth) fetch() error {
	res, err := a.fetchClient.Get("http://nodeserver/inbound_key?pod=" + url.QueryEscape(a.pod))
	if err != nil {
		return fmt.Errorf("inbound key: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4096))
	if err != nil {
		return fmt.Errorf("inbound key: %v", err)
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("inbound key: %d %s", res.StatusCode, strings.TrimSpace(string(body)))
	}
	var answer struct {
		Key string `json:"key"`
	}
	bad := fmt.Errorf("inbound key: bad answer from the nodeserver")
	if json.Unmarshal(body, &answer) != nil {
		return bad
	}
	key, err := hex.DecodeString(answer.Key)
	if err != nil || len(key) != 32 {
		return bad
	}
	id := keyID(key)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.keys) == 0 || a.keys[0].id != id {
		a.keys = append([]podKey{{id, key}}, a.keys...)
		if len(a.keys) > 2 {
			a.keys = a.keys[:2]
		}
	}
	return nil
}

func (a *inboundAuth) lookup(id string) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range a.keys {
		if k.id == id {
			return k.key
		}
	}
	return nil
}

// keyFor returns the key named id, fetching the current key once (single flight, at most once a
// second: an unknown id is also what an attacker sends) when it is not held.
func (a *inboundAuth) keyFor(id string) []byte {
	if key := a.lookup(id); key != nil {
		return key
	}
	a.mu.Lock()
	wait := a.fetching
	if wait == nil && time.Since(a.lastFetch) >= time.Second {
		wait = make(chan struct{})
		a.fetching = wait
		a.lastFetch = time.Now()
		a.mu.Unlock()
		if err := a.fetch(); err != nil {
			logf("%v", err)
		}
		a.mu.Lock()
		a.fetching = nil
		close(wait)
	}
	a.mu.Unlock()
	if wait != nil {
		<-wait
	}
	return a.lookup(id)
}

// check verifies the auth line that followed proxyLine (both with their CRLF).
func (a *inboundAuth) check(proxyLine, authLine string) error {
	fields := strings.Split(strings.TrimSuffix(authLine, "\r\n"), " ")
	if len(fields) != 6 || fields[0] != "RLARK-AUTH" || fields[1] != "v1" {
		return fmt.Errorf("no ticket after the PROXY line")
	}
	id, stamp, nonce, mac := fields[2], fields[3], fields[4], fields[5]
	if len(nonce) != 32 || len(mac) != 32 {
		return fmt.Errorf("malformed ticket")
	}
	if dst := strings.Split(proxyLine, " "); len(dst) < 4 || dst[3] != a.podIP {
		return fmt.Errorf("the PROXY line names another destination than %s", a.podIP)
	}
	key := a.keyFor(id)
	if key == nil {
		return fmt.Errorf("ticket of unknown key %q", id)
	}
	h := hmac.New(sha256.New, key)
	io.WriteString(h, "rlark-inbound v1\n"+proxyLine+id+" "+stamp+" "+nonce)
	want := hex.EncodeToString(h.Sum(nil)[:16])
	if !hmac.Equal([]byte(want), []byte(mac)) {
		return fmt.Errorf("ticket does not match the PROXY line")
	}
	ms, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return fmt.Errorf("malformed ticket time")
	}
	at := time.UnixMilli(ms)
	now := time.Now()
	if at.Before(now.Add(-ticketWindow)) || at.After(now.Add(ticketWindow)) {
		return fmt.Errorf("ticket expired (%s)", now.Sub(at).Round(time.Millisecond))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.nonceOrder) > 0 && a.nonceOrder[0].expiry.Before(now) {
		delete(a.nonces, a.nonceOrder[0].nonce)
		a.nonceOrder = a.nonceOrder[1:]
	}
	if _, seen := a.nonces[nonce]; seen {
		return fmt.Errorf("ticket replayed")
	}
	if len(a.nonces) >= maxNonces {
		return fmt.Errorf("too many new streams (%d tickets within %s)", maxNonces, ticketWindow)
	}
	a.nonces[nonce] = struct{}{}
	a.nonceOrder = append(a.nonceOrder, seenNonce{nonce, at.Add(ticketWindow)})
	return nil
}

// refuse counts a refused stream and logs it: every one while they are rare, then at most one
// line a second naming how many went unlogged (a flood must not fill the pod's log).
func (a *inboundAuth) refuse(from net.Addr, reason error) {
	a.mu.Lock()
	a.refused++
	n := a.refused
	now := time.Now()
	if now.Sub(a.lastLogged) < time.Second && n > 10 {
		a.unlogged++
		a.mu.Unlock()
		return
	}
	skipped := a.unlogged
	a.unlogged = 0
	a.lastLogged = now
	a.mu.Unlock()
	logf("inbound from %s refused (%d refused so far, %d not logged): %v", from, n, skipped, reason)
}
