// rlark-net icmp-probe: ICMP echo for PingMesh (docs/pingmesh.md#icmp), which Node cannot send (it
// opens no raw socket). Long-lived: reads requests "<id> <ipv4> <timeout ms>" one per line on
// stdin, answers "<id> <rtt µs>" or "<id> lost" one per line on stdout, in the order the answers
// come. One raw socket (needs CAP_NET_RAW); replies are matched by the echo identifier (this
// process's) and sequence number (the request's). At most 1024 requests in flight: more are
// answered lost at once. Ends when stdin closes.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const maxInFlight = 1024

type echoWait struct {
	id      string
	started time.Time
	timer   *time.Timer
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

func runIcmpProbe() {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	if err != nil {
		fail("icmp-probe: raw ICMP socket: %v (needs CAP_NET_RAW)", err)
	}
	ident := uint16(os.Getpid() & 0xffff)
	var mu sync.Mutex
	waiting := map[uint16]*echoWait{}
	out := bufio.NewWriter(os.Stdout)
	answer := func(line string) {
		// called with mu held
		out.WriteString(line + "\n")
		out.Flush()
	}

	go func() {
		buf := make([]byte, 1500)
		for {
			n, _, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil {
				if err == syscall.EINTR {
					continue
				}
				fail("icmp-probe: receive: %v", err)
			}
			if n < 20 {
				continue
			}
			ihl := int(buf[0]&0x0f) * 4
			if n < ihl+8 {
				continue
			}
			icmp := buf[ihl:n]
			if icmp[0] != 0 || binary.BigEndian.Uint16(icmp[4:6]) != ident {
				continue // not an echo reply to this process
			}
			seq := binary.BigEndian.Uint16(icmp[6:8])
			mu.Lock()
			if w, ok := waiting[seq]; ok {
				delete(waiting, seq)
				w.timer.Stop()
				answer(fmt.Sprintf("%s %d", w.id, time.Since(w.started).Microseconds()))
			}
			mu.Unlock()
		}
	}()

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 256), 256)
	var seq uint16
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) != 3 {
			continue
		}
		id := fields[0]
		ip := net.ParseIP(fields[1]).To4()
		timeoutMs, err := strconv.Atoi(fields[2])
		if len(id) > 32 || ip == nil || err != nil || timeoutMs < 1 || timeoutMs > 60_000 {
			mu.Lock()
			answer(id + " lost")
			mu.Unlock()
			continue
		}
		mu.Lock()
		if len(waiting) >= maxInFlight {
			answer(id + " lost")
			mu.Unlock()
			continue
		}
		seq++
		for waiting[seq] != nil {
			seq++
		}
		s := seq
		msg := make([]byte, 16)
		msg[0] = 8 // echo request
		binary.BigEndian.PutUint16(msg[4:6], ident)
		binary.BigEndian.PutUint16(msg[6:8], s)
		binary.BigEndian.PutUint64(msg[8:16], uint64(time.Now().UnixNano()))
		binary.BigEndian.PutUint16(msg[2:4], checksum(msg))
		w := &echoWait{id: id, started: time.Now()}
		w.timer = time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() {
			mu.Lock()
			if waiting[s] == w {
				delete(waiting, s)
				answer(w.id + " lost")
			}
			mu.Unlock()
		})
		waiting[s] = w
		var to syscall.SockaddrInet4
		copy(to.Addr[:], ip)
		if err := syscall.Sendto(fd, msg, 0, &to); err != nil {
			delete(waiting, s)
			w.timer.Stop()
			answer(id + " lost")
		}
		mu.Unlock()
	}
}
