// rlark-net lo-addr (`go test -run ^TestLoAddr .`; tests/network/go-lo-addr.test.ts runs it with
// the suite): the IP file's checks, and the netlink request itself in a network namespace of its
// own (needs CAP_SYS_ADMIN to create it, as the CI's root has).
package main

import (
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestLoAddrParsesTheIPFile(t *testing.T) {
	good := []struct{ content, cidr, want string }{
		{"10.77.0.5\n", "10.77.0.0/16", "10.77.0.5"},
		{"10.77.0.5", "10.77.0.0/16", "10.77.0.5"},
		{"10.77.0.5\n", "", "10.77.0.5"},
	}
	for _, c := range good {
		ip, err := parseDomainIP([]byte(c.content), c.cidr)
		if err != nil || ip.String() != c.want {
			t.Errorf("parseDomainIP(%q, %q) = %v, %v; want %s", c.content, c.cidr, ip, err, c.want)
		}
	}
	bad := []struct{ content, cidr, reason string }{
		{"", "10.77.0.0/16", "is empty"},
		{"\n", "10.77.0.0/16", "is empty"},
		{"10.78.0.5\n", "10.77.0.0/16", "outside the Domain's CIDR"},
		{"10.77.0.5\n10.77.0.6\n", "10.77.0.0/16", "not a single IPv4 address"},
		{"10.77.0.5 \n", "10.77.0.0/16", "not a single IPv4 address"},
		{"::ffff:10.77.0.5\n", "10.77.0.0/16", "not a single IPv4 address"},
		{"fd00::5\n", "", "not a single IPv4 address"},
		{"10.77.0.5/32\n", "10.77.0.0/16", "not a single IPv4 address"},
		{"127.0.0.1\n", "", "cannot be a pod's virtual IP"},
		{"0.0.0.0\n", "", "cannot be a pod's virtual IP"},
		{"10.77.0.5\n", "10.77.0.0", "not an IPv4 CIDR"},
	}
	for _, c := range bad {
		_, err := parseDomainIP([]byte(c.content), c.cidr)
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("parseDomainIP(%q, %q) = %v; want an error with %q", c.content, c.cidr, err, c.reason)
		}
	}
}

func TestLoAddrRefusesALongFile(t *testing.T) {
	path := t.TempDir() + "/ip"
	if err := os.WriteFile(path, []byte(strings.Repeat("1", maxIPFile+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readIPFile(path); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("readIPFile of %d bytes = %v; want a refusal", maxIPFile+1, err)
	}
}

// In a fresh network namespace (this goroutine's locked thread only; the thread is discarded
// after, as it is never unlocked), the address ends on lo, and a second add (a restarted init
// container) succeeds and leaves it there once.
func TestLoAddrAddsTheAddressToLoopback(t *testing.T) {
	done := make(chan error, 1)
	var addrs []string
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with the goroutine, namespace and all
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		ip := net.ParseIP("10.77.0.5").To4()
		for range 2 {
			if err := addToInterface(ip, "lo"); err != nil {
				done <- err
				return
			}
		}
		iface, err := net.InterfaceByName("lo")
		if err != nil {
			done <- err
			return
		}
		list, err := iface.Addrs()
		if err != nil {
			done <- err
			return
		}
		for _, a := range list {
			addrs = append(addrs, a.String())
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("in a new network namespace: %v", err)
	}
	count := 0
	for _, a := range addrs {
		if a == "10.77.0.5/32" {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("lo's addresses = %v; want 10.77.0.5/32 once", addrs)
	}
}
