// impair: netem's delay and loss in user space, for kernels built without sch_netem (this
// machine's: CONFIG_NET_SCH_NETEM is not set). It opens two TUN devices, A and B, and copies
// every IP packet between them: A to B delayed by -delay and dropped with probability -loss,
// B to A as it comes. Moving B into another network namespace after "ready" makes a
// point-to-point link between the two namespaces whose kernels' TCP stacks see the injected
// figures, as they would through netem. Standard library only.
//
//	impair -a pmA -b pmB -delay 20ms -loss 0.1
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
	"unsafe"
)

const tunsetiff = 0x400454ca

func openTun(name string) *os.File {
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR, 0)
	if err != nil {
		fail("open /dev/net/tun: %v", err)
	}
	var req struct {
		name  [16]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], name)
	req.flags = syscall.IFF_TUN | syscall.IFF_NO_PI
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), tunsetiff, uintptr(unsafe.Pointer(&req))); e != 0 {
		fail("TUNSETIFF %s: %v", name, e)
	}
	return os.NewFile(uintptr(fd), name)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "impair: "+format+"\n", args...)
	os.Exit(1)
}

type packet struct {
	due  time.Time
	data []byte
}

// forward copies packets from src to dst, each after delay, dropping a share of loss. The queue
// is bounded: a packet that finds it full is dropped, as a full netem queue would.
func forward(src, dst *os.File, delay time.Duration, loss float64) {
	queue := make(chan packet, 4096)
	go func() {
		for p := range queue {
			time.Sleep(time.Until(p.due))
			dst.Write(p.data)
		}
	}()
	buf := make([]byte, 65536)
	for {
		n, err := src.Read(buf)
		if err != nil {
			fail("read %s: %v", src.Name(), err)
		}
		if loss > 0 && rand.Float64() < loss {
			continue
		}
		data := append([]byte(nil), buf[:n]...)
		select {
		case queue <- packet{time.Now().Add(delay), data}:
		default:
		}
	}
}

func main() {
	a := flag.String("a", "", "TUN device A (the delayed side sends)")
	b := flag.String("b", "", "TUN device B")
	delay := flag.Duration("delay", 0, "delay added to every packet from A to B")
	loss := flag.Float64("loss", 0, "share of packets from A to B dropped, 0..1")
	flag.Parse()
	if *a == "" || *b == "" || *loss < 0 || *loss > 1 || *delay < 0 {
		fail("usage: impair -a DEV -b DEV [-delay 20ms] [-loss 0.1]")
	}
	ta, tb := openTun(*a), openTun(*b)
	go forward(ta, tb, *delay, *loss)
	go forward(tb, ta, 0, 0)
	fmt.Println("ready")
	select {}
}
