package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// The lab: two fresh network namespaces joined by one veth pair, with no
// IPv4 address anywhere (nothing can be routed) and no IPv6 link-local
// address (addrgenmode none), so the only frames on the wire are the
// test's. Frames use the local experimental EtherType 0x88b5.

const labEtherType = 0x88b5

// netnsDir is where iproute2 keeps named namespaces (a kernel-facing
// convention of `ip netns`, not a path of this machine).
const netnsDir = "/run/netns/"

// labRange is the whole address range of the AF_XDP lab's frames.
const labRange = "198.19.0.0/16"

var labSeq atomic.Int32

type lab struct {
	nsA, nsB, ifA, ifB string
}

// newLab builds the namespaces and the veth pair, named cx<pid>n<seq>a/b,
// and removes them when t ends, failed or not (the n keeps pid 12 lab 34
// apart from pid 123 lab 4; interface names hold 15 bytes). It skips
// (fails under CI=true) without root or without ip(8).
func newLab(t testing.TB) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		testpeer.Missing(t, "AF_XDP lab needs root (network namespaces, veth, bpf(2)); run as root")
	}
	ip := testpeer.RequirePeer(t, "ip")
	name := fmt.Sprintf("cx%dn%d", os.Getpid(), labSeq.Add(1)%1000) // at most 14 bytes with the a/b suffix
	l := &lab{nsA: name + "a", nsB: name + "b", ifA: name + "a", ifB: name + "b"}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// The lab rule: first a host blackhole route for the lab's whole range
	// (198.19.0.0/16, only inside the stacks' frames), so that no packet of
	// it could leave by the default route; its metric is this lab's own, so
	// that labs running at once never remove each other's.
	metric := fmt.Sprint(os.Getpid()*1000 + int(labSeq.Load()%1000))
	run("route", "add", "blackhole", labRange, "metric", metric)
	t.Cleanup(func() { _ = exec.Command(ip, "route", "del", "blackhole", labRange, "metric", metric).Run() })
	run("netns", "add", l.nsA)
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", l.nsA).Run() })
	run("netns", "add", l.nsB)
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", l.nsB).Run() })
	run("link", "add", l.ifA, "netns", l.nsA, "type", "veth", "peer", "name", l.ifB, "netns", l.nsB)
	run("-n", l.nsA, "link", "set", "dev", l.ifA, "addrgenmode", "none")
	run("-n", l.nsB, "link", "set", "dev", l.ifB, "addrgenmode", "none")
	run("-n", l.nsA, "link", "set", "dev", l.ifA, "up")
	run("-n", l.nsB, "link", "set", "dev", l.ifB, "up")
	for _, ns := range []string{l.nsA, l.nsB} {
		out, err := exec.Command(ip, "-n", ns, "-4", "addr", "show").CombinedOutput()
		if err != nil || strings.Contains(string(out), "inet ") {
			t.Fatalf("namespace %s must hold no IPv4 address: %v %s", ns, err, out)
		}
	}
	return l
}

// xdpAttached reports whether ip(8) shows an XDP program on the lab's A end.
func (l *lab) xdpAttached(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("ip", "-n", l.nsA, "link", "show", "dev", l.ifA).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show: %v: %s", err, out)
	}
	return strings.Contains(string(out), "xdp")
}

// inNetns runs f on a thread switched into namespace ns, on its own
// goroutine; the thread is switched back and unlocked after, or, if that
// fails, left locked so that the runtime discards it.
func inNetns(ns string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(netnsDir+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open netns %s: %w", ns, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("setns back: %w", err)) // thread stays locked
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

// openA opens an AF_XDP link on the lab's A end (namespace A).
func (l *lab) openA(t testing.TB, cfg Config) *Link {
	t.Helper()
	cfg.Interface = l.ifA
	var x *Link
	if err := inNetns(l.nsA, func() (err error) { x, err = Open(cfg); return err }); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = x.Close() })
	return x
}

// packetSock is a plain AF_PACKET socket on the lab's B end, receiving only
// the lab EtherType and not its own outgoing frames.
type packetSock struct {
	fd  int
	ifx int
	mac net.HardwareAddr
}

func (l *lab) packetB(t testing.TB) *packetSock {
	t.Helper()
	var p packetSock
	err := inNetns(l.nsB, func() error {
		ifc, err := net.InterfaceByName(l.ifB)
		if err != nil {
			return err
		}
		p.ifx, p.mac = ifc.Index, ifc.HardwareAddr
		proto := htons(labEtherType)
		p.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(proto))
		if err != nil {
			return err
		}
		if err := unix.Bind(p.fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: p.ifx}); err != nil {
			return err
		}
		return unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	})
	if err != nil {
		t.Fatalf("AF_PACKET socket in %s: %v", l.nsB, err)
	}
	t.Cleanup(func() { _ = unix.Close(p.fd) })
	return &p
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Lab frame: Ethernet header, "CXDP", direction byte, sequence number,
// length, then bytes derived from the sequence number.
const labHeader = 14 + 4 + 1 + 4 + 2

func labLen(seq uint32) int { return 60 + int(seq*37)%(1514-60+1) }

func makeFrame(b []byte, dst, src []byte, dir byte, seq uint32) int {
	n := labLen(seq)
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:], labEtherType)
	copy(b[14:], "CXDP")
	b[18] = dir
	binary.BigEndian.PutUint32(b[19:], seq)
	binary.BigEndian.PutUint16(b[23:], uint16(n))
	for i := labHeader; i < n; i++ {
		b[i] = byte(seq*7) + byte(i)
	}
	return n
}

// checkFrame returns the sequence number of an intact lab frame of
// direction dir, or an error saying what is wrong; other frames (not ours)
// give ok false and no error.
func checkFrame(f []byte, dir byte) (seq uint32, ok bool, err error) {
	if len(f) < labHeader || binary.BigEndian.Uint16(f[12:]) != labEtherType || string(f[14:18]) != "CXDP" {
		return 0, false, nil
	}
	if f[18] != dir {
		return 0, false, fmt.Errorf("frame of direction %d, want %d", f[18], dir)
	}
	seq = binary.BigEndian.Uint32(f[19:])
	n := int(binary.BigEndian.Uint16(f[23:]))
	if n != labLen(seq) || len(f) != n {
		return seq, false, fmt.Errorf("frame %d: %d bytes, header says %d, want %d", seq, len(f), n, labLen(seq))
	}
	for i := labHeader; i < n; i++ {
		if f[i] != byte(seq*7)+byte(i) {
			return seq, false, fmt.Errorf("frame %d: byte %d is %#x", seq, i, f[i])
		}
	}
	return seq, true, nil
}

// sendAtoB transmits frames [from, to) from the link in bursts and checks
// that B receives each intact, in order.
func sendAtoB(t *testing.T, x *Link, p *packetSock, from, to uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	batch := make([][]byte, 0, 32)
	src := x.MAC()
	for seq := from; seq < to; {
		batch = batch[:0]
		for len(batch) < cap(batch) && seq+uint32(len(batch)) < to {
			b := x.Buffer()
			if b == nil { // every TX frame is in flight: wait for completions
				if time.Now().After(deadline) {
					t.Fatalf("no transmit buffer at frame %d: %+v", seq, x.Counters())
				}
				if len(batch) > 0 {
					break
				}
				continue
			}
			n := makeFrame(b, p.mac, src[:], 'A', seq+uint32(len(batch)))
			batch = append(batch, b[:n])
		}
		if got := x.Transmit(batch); got != len(batch) {
			t.Fatalf("Transmit accepted %d of %d at frame %d", got, len(batch), seq)
		}
		end := seq + uint32(len(batch))
		for ; seq < end; seq++ {
			f := p.recv(t, deadline)
			got, ok, err := checkFrame(f, 'A')
			if err != nil || !ok || got != seq {
				t.Fatalf("B received frame %d (ours %v, %v), want %d", got, ok, err, seq)
			}
		}
	}
}

var recvBuf = make([]byte, 4096)

// recv returns the next frame B receives, polling until deadline.
func (p *packetSock) recv(t *testing.T, deadline time.Time) []byte {
	t.Helper()
	for {
		n, _, err := unix.Recvfrom(p.fd, recvBuf, 0)
		if err == nil {
			return recvBuf[:n]
		}
		if !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("recvfrom: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("B received nothing before the deadline")
		}
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}, 10)
	}
}

// sendBtoA writes frames [from, to) from B in windows of 16 and checks that
// the link receives each intact, in order.
func sendBtoA(t *testing.T, x *Link, p *packetSock, from, to uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	frames := make([][]byte, 64)
	buf := make([]byte, 2048)
	dst := x.MAC()
	for seq := from; seq < to; {
		end := min(seq+16, to)
		for s := seq; s < end; s++ {
			n := makeFrame(buf, dst[:], p.mac, 'B', s)
			if err := unix.Sendto(p.fd, buf[:n], 0, &unix.SockaddrLinklayer{Ifindex: p.ifx, Halen: 6,
				Addr: [8]byte{dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]}}); err != nil {
				t.Fatalf("sendto frame %d: %v", s, err)
			}
		}
		for seq < end {
			n := x.Receive(frames)
			for _, f := range frames[:n] {
				got, ok, err := checkFrame(f, 'B')
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue
				}
				if got != seq {
					t.Fatalf("link received frame %d, want %d", got, seq)
				}
				seq++
			}
			if n == 0 {
				if time.Now().After(deadline) {
					st, _ := x.Stats()
					t.Fatalf("link received up to %d of %d before the deadline: %+v %+v", seq, end, x.Counters(), st)
				}
				if err := x.Wait(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestExchangeWithPacketSocket sends frames of every length both ways
// between the AF_XDP link and an AF_PACKET socket, many times the ring
// sizes, and checks each frame intact, the counters exact and every UMEM
// frame back where it belongs.
func TestExchangeWithPacketSocket(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  Config
	}{
		{"need-wakeup", Config{}},
		{"no-need-wakeup", Config{NoNeedWakeup: true}},
		{"generic-xdp", Config{GenericXDP: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			l := newLab(t)
			cfg := mode.cfg
			cfg.FillRing, cfg.CompletionRing, cfg.RXRing, cfg.TXRing = 64, 64, 64, 32
			x := l.openA(t, cfg)
			p := l.packetB(t)
			if !l.xdpAttached(t) {
				t.Fatal("no XDP program on the interface after Open")
			}
			const n = 1000 // > 15 times every ring size
			sendAtoB(t, x, p, 0, n)
			sendBtoA(t, x, p, 0, n)
			c := x.Counters()
			if c.TxFrames != n || c.TxDropped != 0 || c.TxNoBuffer != 0 {
				t.Errorf("TX counters %+v, want %d frames, no drops", c, n)
			}
			if c.RxFrames != n {
				t.Errorf("RX counters %+v, want %d frames (no other frames in the lab)", c, n)
			}
			var wantBytes uint64
			for s := uint32(0); s < n; s++ {
				wantBytes += uint64(labLen(s))
			}
			if c.TxBytes != wantBytes || c.RxBytes != wantBytes {
				t.Errorf("bytes TX %d RX %d, want %d each", c.TxBytes, c.RxBytes, wantBytes)
			}
			st, err := x.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.KernelRxDropped != 0 || st.KernelRxInvalid != 0 || st.KernelTxInvalid != 0 {
				t.Errorf("kernel dropped or refused frames: %+v", st)
			}
			t.Logf("stats %+v", st)
			// Every frame is accounted for: RX frames free, lent or in the
			// kernel's rings; TX frames all back once completions drain.
			x.Receive(nil)
			testpeer.Eventually(t, 5*time.Second, "all TX frames completed", func() bool {
				x.kick(true)
				x.reclaim()
				_, txFree, _, _ := x.frameCounts()
				return txFree == x.cfg.Frames-x.cfg.rxFrames()
			})
			rxFree, _, lent, held := x.frameCounts()
			if rxFree+lent+held != x.cfg.rxFrames() || lent != 0 || held != cfg.FillRing {
				t.Errorf("RX frames: %d free + %d lent + %d in the kernel, want %d in all, 0 lent, %d in the kernel",
					rxFree, lent, held, x.cfg.rxFrames(), cfg.FillRing)
			}
		})
	}
}

// TestCloseReleasesAndRebind checks that a second socket on a bound queue
// is refused with EBUSY after the bounded retry, that Close detaches the
// program and that a new link binds the same queue at once (retrying EBUSY
// while the kernel tears the old socket down) and works.
func TestCloseReleasesAndRebind(t *testing.T) {
	l := newLab(t)
	p := l.packetB(t)
	cfg := Config{FillRing: 64, CompletionRing: 64, RXRing: 64, TXRing: 64, Interface: l.ifA}
	x := l.openA(t, cfg)
	sendBtoA(t, x, p, 0, 100)

	busy := cfg
	busy.NoProgram = true
	busy.BindRetry = 50 * time.Millisecond
	start := time.Now()
	err := inNetns(l.nsA, func() error { y, err := Open(busy); _ = y; return err })
	if !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second Open on a bound queue: %v, want EBUSY", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 2*time.Second {
		t.Errorf("EBUSY retry took %v, want about 50ms", took)
	}
	sendAtoB(t, x, p, 0, 100) // the first link is unharmed

	if err := x.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := x.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	if x.Receive(make([][]byte, 4)) != 0 || x.Buffer() != nil || x.Transmit([][]byte{nil}) != 0 {
		t.Fatal("a closed link received, lent or accepted a frame")
	}
	if err := x.Wait(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait on a closed link: %v, want ErrClosed", err)
	}
	if l.xdpAttached(t) {
		t.Fatal("XDP program still attached after Close")
	}
	for round := range 3 {
		y := l.openA(t, cfg)
		sendBtoA(t, y, p, 0, 100)
		sendAtoB(t, y, p, 0, 100)
		st, _ := y.Stats()
		t.Logf("rebind %d: %d EBUSY retries", round, st.BindRetries)
		if err := y.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLicense loads the redirect program under a non-GPL license (it uses
// no GPL-only helper) and checks that the kernel does enforce the GPL check
// on a GPL-only helper under the same license, so the first load proves
// something.
func TestLicense(t *testing.T) {
	if os.Geteuid() != 0 {
		testpeer.Missing(t, "loading XDP programs needs root")
	}
	p, err := loadProgram(0, "Proprietary")
	if err != nil {
		t.Fatalf("redirect program under a non-GPL license: %v", err)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	// bpf_trace_printk (helper 6) is GPL-only.
	gplOnly := []uint64{insn(opCall, 0, 0, 0, 6), insn(opExit, 0, 0, 0, 0)}
	_, err = loadInsns(gplOnly, "Proprietary")
	if err == nil || !strings.Contains(err.Error(), "GPL") {
		t.Fatalf("GPL-only helper under a non-GPL license: %v, want the verifier's GPL refusal", err)
	}
}

// TestModesOnVeth checks what veth offers: zero copy is refused (veth has
// no AF_XDP zero-copy support), auto falls back to copy and works.
func TestModesOnVeth(t *testing.T) {
	l := newLab(t)
	p := l.packetB(t)
	err := inNetns(l.nsA, func() error {
		x, err := Open(Config{Interface: l.ifA, Mode: ModeZeroCopy, BindRetry: -1})
		if err == nil {
			_ = x.Close()
		}
		return err
	})
	if !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("zero-copy bind on veth: %v, want EOPNOTSUPP (veth has no zero-copy support)", err)
	}
	t.Logf("zero copy on veth: %v", err)
	if l.xdpAttached(t) {
		t.Fatal("a failed Open left its XDP program attached")
	}
	x := l.openA(t, Config{Mode: ModeAuto, FillRing: 64, RXRing: 64, CompletionRing: 64, TXRing: 64})
	sendBtoA(t, x, p, 0, 200)
	sendAtoB(t, x, p, 0, 200)
}

// TestNoAllocations checks that a turn of an engine's loop on the link
// (Buffer, Transmit, Receive, idle Receive, poll) allocates nothing.
func TestNoAllocations(t *testing.T) {
	l := newLab(t)
	x := l.openA(t, Config{FillRing: 64, RXRing: 64, CompletionRing: 64, TXRing: 64})
	p := l.packetB(t)
	frames := make([][]byte, 16)
	batch := make([][]byte, 0, 16)
	src := x.MAC()
	allocs := testing.AllocsPerRun(200, func() {
		batch = batch[:0]
		for range 8 {
			if b := x.Buffer(); b != nil {
				batch = append(batch, fill64(b, p.mac, src[:]))
			}
		}
		x.Transmit(batch)
		x.Receive(frames)
		x.Receive(frames)
		_ = x.Wait(0) // the poll() an idle Receive makes when asked
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per loop turn, want 0", allocs)
	}
	if c := x.Counters(); c.TxFrames == 0 {
		t.Fatalf("nothing was sent: %+v", c)
	}
}

// TestRefusesLargeMTU checks that Open refuses an interface whose MTU-sized
// frames would not fit a UMEM frame after the 256-byte headroom.
func TestRefusesLargeMTU(t *testing.T) {
	l := newLab(t)
	if out, err := exec.Command("ip", "-n", l.nsA, "link", "set", "dev", l.ifA, "mtu", "4000").CombinedOutput(); err != nil {
		t.Fatalf("ip link set mtu: %v: %s", err, out)
	}
	err := inNetns(l.nsA, func() error {
		x, err := Open(Config{Interface: l.ifA})
		if err == nil {
			_ = x.Close()
		}
		return err
	})
	if !errors.Is(err, link.ErrConfig) {
		t.Fatalf("Open with MTU 4000 and 2048-byte frames: %v, want link.ErrConfig", err)
	}
}

// TestTransmitRingFull gives Transmit twice what the TX ring holds: it
// accepts a ringful, counts the rest dropped and returns their frames to
// the stack, so that once the sent ones complete every TX frame is free
// again; the peer receives exactly the accepted ones.
func TestTransmitRingFull(t *testing.T) {
	l := newLab(t)
	p := l.packetB(t)
	const ring = 32
	cfg := Config{FillRing: 64, RXRing: 64, CompletionRing: 64, TXRing: ring}
	cfg.Frames = 64 + 64 + 2*ring
	x := l.openA(t, cfg)
	src := x.MAC()
	batch := make([][]byte, 0, 2*ring)
	for s := range uint32(2 * ring) {
		b := x.Buffer()
		if b == nil {
			t.Fatalf("no buffer %d of %d", s, 2*ring)
		}
		batch = append(batch, b[:makeFrame(b, p.mac, src[:], 'A', s)])
	}
	if x.Buffer() != nil || x.Counters().TxNoBuffer != 1 {
		t.Fatalf("a buffer beyond the TX frames: %+v", x.Counters())
	}
	if got := x.Transmit(batch); got != ring {
		t.Fatalf("Transmit accepted %d of %d with a ring of %d", got, 2*ring, ring)
	}
	if c := x.Counters(); c.TxFrames != ring || c.TxDropped != ring {
		t.Fatalf("counters %+v, want %d sent and %d dropped", c, ring, ring)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s := range uint32(ring) {
		got, ok, err := checkFrame(p.recv(t, deadline), 'A')
		if err != nil || !ok || got != s {
			t.Fatalf("B received frame %d (ours %v, %v), want %d", got, ok, err, s)
		}
	}
	testpeer.Eventually(t, 5*time.Second, "every TX frame free again", func() bool {
		x.kick(true)
		x.reclaim()
		_, txFree, _, _ := x.frameCounts()
		return txFree == 2*ring
	})
	if _, _, err := unix.Recvfrom(p.fd, recvBuf, 0); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("B has a frame beyond the %d accepted (err %v)", ring, err)
	}
}
