package afpacket_test

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
)

// vethPair returns the two ends of a lab veth (both without addresses).
func vethPair(b *testing.B) (a, z *lab.End) {
	b.Helper()
	l := labtest.New(b)
	p, err := l.StackPair()
	if err != nil {
		b.Fatalf("StackPair = %v", err)
	}
	return p.Cicada, p.Peer
}

// frame64 is a 64-byte frame of the local experimental EtherType 0x88b5,
// which the peer's kernel drops without further work.
func frame64(dst, src []byte) []byte {
	f := make([]byte, 64)
	copy(f, dst)
	copy(f[6:], src)
	f[12], f[13] = 0x88, 0xb5
	return f
}

// BenchmarkTransmitRing sends 64-byte frames in bursts of 64 through the
// link's TPACKET_V2 TX ring (one send(2) per burst) and reports frames/s;
// the peer end's RX ring counts what arrived.
func BenchmarkTransmitRing(b *testing.B) {
	a, z := vethPair(b)
	var tx, rx *afpacket.Link
	if err := a.Netns.Do(func() (err error) { tx, err = afpacket.Open(afpacket.Config{Index: a.Index}); return }); err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	if err := z.Netns.Do(func() (err error) { rx, err = afpacket.Open(afpacket.Config{Index: z.Index}); return }); err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	f := frame64(z.MAC, a.MAC)
	burst := make([][]byte, 0, 64)
	got := make([][]byte, 64)
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; {
		burst = burst[:0]
		for len(burst) < cap(burst) && sent+len(burst) < b.N {
			buf := tx.Buffer()
			if buf == nil {
				break
			}
			burst = append(burst, buf[:copy(buf, f)])
		}
		sent += tx.Transmit(burst)
		rx.Receive(got)
	}
	el := time.Since(start)
	b.StopTimer()
	st := rx.Stats()
	b.ReportMetric(float64(b.N)/el.Seconds(), "frames/s")
	b.ReportMetric(float64(st.KernelPackets)/float64(b.N), "arrived/sent")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTransmitSendmmsg is the alternative measured against the ring:
// sendmmsg(2) of 64 frames per call on a plain AF_PACKET socket with
// PACKET_QDISC_BYPASS, with the same RX ring on the peer as the ring's
// benchmark.
func BenchmarkTransmitSendmmsg(b *testing.B) {
	a, z := vethPair(b)
	var rx *afpacket.Link
	if err := z.Netns.Do(func() (err error) { rx, err = afpacket.Open(afpacket.Config{Index: z.Index}); return }); err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	got := make([][]byte, 64)
	var fd int
	if err := a.Netns.Do(func() (err error) {
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: a.Index})
	}); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	f := frame64(z.MAC, a.MAC)
	const burst = 64
	iov := make([]unix.Iovec, burst)
	msgs := make([]unix.Mmsghdr, burst)
	for i := range msgs {
		iov[i].Base = &f[0]
		iov[i].SetLen(len(f))
		msgs[i].Hdr.Iov = &iov[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; {
		n := min(burst, b.N-sent)
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(n), 0, 0, 0)
		if errno != 0 && errno != unix.EAGAIN && errno != unix.ENOBUFS {
			b.Fatalf("sendmmsg: %v", errno)
		}
		sent += int(r)
		rx.Receive(got)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "frames/s")
	b.ReportMetric(float64(rx.Stats().KernelPackets)/float64(b.N), "arrived/sent")
	b.ReportMetric(0, "ns/op")
}
