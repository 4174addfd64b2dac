// Fuzz targets for what the sidecar reads from the network on :5700 (hack/fuzz/run runs them
// with -fuzztime 5000x each; docs: hack/fuzz/README.md): the PROXY line and the RLARK-AUTH ticket
// after it. Expectation: an error or a port, never a panic; a ticket is accepted only when its
// MAC matches the PROXY line.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

func FuzzProxyPort(f *testing.F) {
	for _, seed := range []string{
		"PROXY TCP4 10.0.0.1 10.0.0.2 1234 8080\r\n",
		"PROXY TCP4 10.0.0.1 10.0.0.2 0 0\r\n",
		"PROXY TCP6 ::1 ::1 1 2\r\n",
		"PROXY TCP4 ::ffff:10.0.0.1 10.0.0.2 1 65536\r\n",
		"PROXY UNKNOWN\r\n",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		port, err := proxyPort(line)
		if err == nil && (port < 1 || port > 65535) {
			t.Fatalf("proxyPort(%q) accepted port %d", line, port)
		}
	})
}

func FuzzInboundCheck(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	sign := func(proxyLine, id, stamp, nonce string) string {
		h := hmac.New(sha256.New, key)
		h.Write([]byte("rlark-inbound v1\n" + proxyLine + id + " " + stamp + " " + nonce))
		return hex.EncodeToString(h.Sum(nil)[:16])
	}
	proxy := "PROXY TCP4 10.0.0.1 10.0.0.9 1234 8080\r\n"
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	nonce := strings.Repeat("ab", 16)
	f.Add(proxy, "RLARK-AUTH v1 k1 "+now+" "+nonce+" "+sign(proxy, "k1", now, nonce)+"\r\n")
	f.Add(proxy, "RLARK-AUTH v1 k1 "+now+" "+nonce+" "+strings.Repeat("0", 32)+"\r\n")
	f.Add("PROXY TCP4 10.0.0.1 10.0.0.8 1 2\r\n", "RLARK-AUTH v1 k2 x y z\r\n")
	f.Fuzz(func(t *testing.T, proxyLine, authLine string) {
		a := &inboundAuth{podIP: "10.0.0.9", nonces: map[string]struct{}{}, lastFetch: time.Now()}
		a.keys = []podKey{{id: "k1", key: key}}
		if err := a.check(proxyLine, authLine); err == nil {
			fields := strings.Split(strings.TrimSuffix(authLine, "\r\n"), " ")
			if len(fields) != 6 || sign(proxyLine, fields[2], fields[3], fields[4]) != fields[5] {
				t.Fatalf("check accepted a ticket that does not match: %q %q", proxyLine, authLine)
			}
		}
	})
}
