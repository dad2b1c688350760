package afxdp

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const benchFrameLen = 64

// fill64 writes a 64-byte lab frame header into b.
func fill64(b []byte, dst, src []byte) []byte {
	copy(b[0:6], dst)
	copy(b[6:12], src)
	b[12], b[13] = labEtherType>>8, labEtherType&0xff
	return b[:benchFrameLen]
}

// transmitFlat transmits 64-byte frames in bursts of 64 until n are
// accepted, stop is set or a minute has passed; it returns how many were
// accepted.
func transmitFlat(x *Link, dst []byte, n uint64, stop *atomic.Bool) uint64 {
	batch := make([][]byte, 0, 64)
	src := x.MAC()
	deadline := time.Now().Add(time.Minute)
	var sent uint64
	for turn := 0; sent < n && !stop.Load(); turn++ {
		if turn%1024 == 0 && time.Now().After(deadline) {
			break
		}
		batch = batch[:0]
		for len(batch) < cap(batch) {
			b := x.Buffer()
			if b == nil {
				break
			}
			batch = append(batch, fill64(b, dst, src[:]))
		}
		sent += uint64(x.Transmit(batch))
	}
	return sent
}

// BenchmarkTransmit measures TX-only packets per second of 64-byte frames
// from the link into the veth (the peer namespace drops them). Run it with
// a fixed count, e.g. -benchtime 2000000x.
func BenchmarkTransmit(b *testing.B) {
	l := newLab(b)
	x := l.openA(b, Config{})
	dst := []byte{0x02, 0, 0, 0, 0, 0xb}
	var stop atomic.Bool
	b.ResetTimer()
	start := time.Now()
	sent := transmitFlat(x, dst, uint64(b.N), &stop)
	el := time.Since(start)
	b.StopTimer()
	st, _ := x.Stats()
	b.ReportMetric(float64(sent)/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(st.Kicks)/float64(sent), "kicks/frame")
	b.Logf("TX budget per sendto: %d frames", st.TxBudget)
}

// BenchmarkReceive measures RX packets per second of 64-byte frames that a
// second AF_XDP link (transmit only, in the other namespace, on its own
// goroutine) sends flat out, and the share of the sent frames received.
func BenchmarkReceive(b *testing.B) {
	l := newLab(b)
	x := l.openA(b, Config{})
	var gen *Link
	if err := inNetns(l.nsB, func() (err error) {
		gen, err = Open(Config{Interface: l.ifB, NoProgram: true})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gen.Close() })
	dst := x.MAC()
	var stop atomic.Bool
	var sent uint64
	var wg sync.WaitGroup
	frames := make([][]byte, 64)
	b.ResetTimer()
	wg.Add(1)
	go func() {
		defer wg.Done()
		sent = transmitFlat(gen, dst[:], ^uint64(0), &stop)
	}()
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	var got uint64
	for got < uint64(b.N) && time.Now().Before(deadline) {
		n := x.Receive(frames)
		got += uint64(n)
		if n == 0 { // idle: sleep in poll() rather than spin against the sender
			_ = x.Wait(time.Millisecond)
		}
	}
	el := time.Since(start)
	stop.Store(true)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(got)/el.Seconds()/1e6, "Mpps")
	if st, err := x.Stats(); err == nil {
		b.Logf("receiver: %+v", st)
	}
	if sent > 0 {
		b.ReportMetric(100*float64(got)/float64(sent), "%received")
	}
}
