// rlark-net lo-addr: puts a Domain pod's virtual IP on the pod's loopback (issue 24 item 3).
//
// A Ray node in a Domain advertises its virtual IP (--node-ip-address) and Ray also binds it, so
// the address must be on an interface of the pod; the virtual IP is routed by the Domain's data
// path, not by the cluster, so nothing else puts it there. The Kubernetes runtime runs this as an
// init container after the native sidecar (which writes the IP to RLARK_DOMAIN_IP_FILE once the
// nodeserver told it), as root with NET_ADMIN only; the Task's containers start after it, with the
// address in place and no privilege of their own. The process runtime does the same with
// `ip addr replace <vip>/32 dev lo` (operators/agent/runtimes/process/pod-network.ts).
//
// Standard library only: the address is added with one netlink RTM_NEWADDR (NLM_F_REPLACE, so a
// restarted init container is idempotent).
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxIPFile bounds what is read of the IP file: an IPv4 address and a newline.
const maxIPFile = 64

// parseDomainIP checks the IP file's content: a single IPv4 address (a trailing newline allowed),
// inside cidr when cidr is not empty.
func parseDomainIP(content []byte, cidr string) (net.IP, error) {
	text := strings.TrimSuffix(string(content), "\n")
	if text == "" {
		return nil, errors.New("is empty")
	}
	ip := net.ParseIP(text)
	if ip == nil || ip.To4() == nil || strings.Contains(text, ":") {
		return nil, fmt.Errorf("holds %q, not a single IPv4 address", text)
	}
	ip = ip.To4()
	if ip.IsUnspecified() || ip.IsLoopback() || ip.IsMulticast() || ip.Equal(net.IPv4bcast) {
		return nil, fmt.Errorf("holds %s, which cannot be a pod's virtual IP", ip)
	}
	if cidr != "" {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil || network.IP.To4() == nil {
			return nil, fmt.Errorf("RLARK_DOMAIN_CIDR=%q is not an IPv4 CIDR", cidr)
		}
		if !network.Contains(ip) {
			return nil, fmt.Errorf("holds %s, outside the Domain's CIDR %s", ip, cidr)
		}
	}
	return ip, nil
}

// readIPFile reads at most maxIPFile bytes; a longer file is refused, not truncated.
func readIPFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, maxIPFile+1)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return nil, err
	}
	if n > maxIPFile {
		return nil, fmt.Errorf("is longer than %d bytes", maxIPFile)
	}
	return buf[:n], nil
}

// newAddrMessage is an RTM_NEWADDR request for ip/32 on the interface index, scope global (as
// `ip addr replace <ip>/32 dev lo` sends it).
func newAddrMessage(ip net.IP, index int, seq uint32) []byte {
	const rtaLen = 4 + 4 // rtattr header and an IPv4 address
	length := syscall.NLMSG_HDRLEN + syscall.SizeofIfAddrmsg + 2*rtaLen
	msg := make([]byte, length)
	le := binary.NativeEndian // netlink is host order
	le.PutUint32(msg[0:], uint32(length))
	le.PutUint16(msg[4:], syscall.RTM_NEWADDR)
	le.PutUint16(msg[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_CREATE|syscall.NLM_F_REPLACE)
	le.PutUint32(msg[8:], seq)
	le.PutUint32(msg[12:], 0)
	p := msg[syscall.NLMSG_HDRLEN:]
	p[0] = syscall.AF_INET
	p[1] = 32 // prefix length
	p[2] = 0  // flags
	p[3] = syscall.RT_SCOPE_UNIVERSE
	le.PutUint32(p[4:], uint32(index))
	p = p[syscall.SizeofIfAddrmsg:]
	for _, kind := range []uint16{syscall.IFA_LOCAL, syscall.IFA_ADDRESS} {
		le.PutUint16(p[0:], rtaLen)
		le.PutUint16(p[2:], kind)
		copy(p[4:8], ip.To4())
		p = p[rtaLen:]
	}
	return msg
}

// addToInterface sends the request and reads the kernel's acknowledgement.
func addToInterface(ip net.IP, name string) error {
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("interface %s: %v", name, err)
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %v", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %v", err)
	}
	const seq = 1
	if err := syscall.Sendto(fd, newAddrMessage(ip, iface.Index, seq), 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %v", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("netlink receive: %v", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink answer: %v", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != syscall.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return errors.New("netlink answer: short error message")
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data[0:4])); code != 0 {
				return fmt.Errorf("adding %s/32 to %s: %v", ip, name, syscall.Errno(-code))
			}
			return nil
		}
	}
}

// runLoAddr waits (bounded) for the IP file, checks it and adds the address to lo. On timeout it
// exits 1 with the reason: the kubelet restarts the init container (or, in a pod that restarts
// nothing, fails the pod, as the Ray scripts' own wait would).
func runLoAddr() {
	path := os.Getenv("RLARK_DOMAIN_IP_FILE")
	if path == "" {
		fail("lo-addr: RLARK_DOMAIN_IP_FILE is not set")
	}
	cidr := os.Getenv("RLARK_DOMAIN_CIDR")
	wait := env("RLARK_IP_WAIT_SECONDS", "600")
	seconds, err := strconv.ParseUint(wait, 10, 32)
	if err != nil || seconds == 0 {
		fail("lo-addr: RLARK_IP_WAIT_SECONDS=%q is not a positive number of seconds", wait)
	}
	logf("lo-addr: waiting up to %ds for the sidecar to write this pod's virtual IP to %s", seconds, path)
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var content []byte
	for {
		content, err = readIPFile(path)
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			fail("lo-addr: %s did not appear within %ds (the sidecar writes it once the nodeserver knows this pod's virtual IP: see the rlark-sidecar container's log)", path, seconds)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		fail("lo-addr: %s: %v", path, err)
	}
	ip, err := parseDomainIP(content, cidr)
	if err != nil {
		fail("lo-addr: %s %v", path, err)
	}
	if err := addToInterface(ip, "lo"); err != nil {
		fail("lo-addr: %v", err)
	}
	fmt.Printf("rlark-net: lo-addr: %s/32 on lo\n", ip)
}
