//go:build dpdk && cgo && linux

package dpdk_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// testEAL is the one EAL of the test binary (DPDK initialises once per
// process): no hugepages, two null devices; the lab tests probe their
// af_packet and af_xdp devices later.
var testEAL = []string{"--no-huge", "-m", "512", "--vdev", "net_null0", "--vdev", "net_null1,copy=1,size=60",
	"--log-level", "*:warning"}

// initEAL initialises the EAL, skipping without root.
func initEAL(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testpeer.Missing(t, "DPDK's EAL needs root (memory, devices)")
	}
	if err := dpdk.Init(testEAL); err != nil {
		t.Fatalf("Init = %v", err)
	}
}

func open(t testing.TB, cfg dpdk.Config) *dpdk.Link {
	t.Helper()
	l, err := dpdk.Open(cfg)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestInitOnceWithItsArguments(t *testing.T) {
	initEAL(t)
	if err := dpdk.Init([]string{"--no-huge"}); !errors.Is(err, dpdk.ErrInitialised) {
		t.Errorf("Init(other args) = %v; want ErrInitialised", err)
	}
	got := dpdk.EALArgs()
	want := []string{"--no-shconf", "--file-prefix " + dpdk.FilePrefix(), "--no-pci", "--no-telemetry", "-l"}
	for _, w := range want {
		if !bytes.Contains([]byte(" "+joinArgs(got)+" "), []byte(" "+w+" ")) {
			t.Errorf("EAL args %q lack %s", got, w)
		}
	}
}

func joinArgs(a []string) string {
	var b bytes.Buffer
	for i, s := range a {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

// startAffinity is the process's CPU set before the EAL pinned anything.
var startAffinity = threadAffinity(os.Getpid())

// threadAffinity returns a thread's Cpus_allowed_list.
func threadAffinity(tid int) string {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// TestInitLeavesGoThreadsUnpinned: rte_eal_init pins the thread it runs
// on; every thread of the Go runtime (named as the process; DPDK names
// its own) must keep the process's CPU set, also threads created later.
func TestInitLeavesGoThreadsUnpinned(t *testing.T) {
	initEAL(t)
	// Start and lock a few goroutines so the runtime makes threads now.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			time.Sleep(time.Millisecond)
		}()
	}
	wg.Wait()
	comm, _ := os.ReadFile("/proc/self/comm")
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	goThreads := 0
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		c, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/comm")
		if !bytes.Equal(c, comm) {
			continue // a DPDK thread (eal-intr-thread...)
		}
		goThreads++
		if got := threadAffinity(tid); got != startAffinity {
			t.Errorf("thread %d allowed CPUs %s; the process started with %s", tid, got, startAffinity)
		}
	}
	if goThreads < 2 {
		t.Errorf("found %d Go threads; want several", goThreads)
	}
}

func TestOpenRefusesUnknownPort(t *testing.T) {
	initEAL(t)
	for _, port := range []string{"net_nosuch9", "77"} {
		if _, err := dpdk.Open(dpdk.Config{Port: port}); !errors.Is(err, link.ErrConfig) {
			t.Errorf("Open(%s) = %v; want link.ErrConfig", port, err)
		}
	}
}

func TestNullTransmitAndReceive(t *testing.T) {
	initEAL(t)
	l := open(t, dpdk.Config{Port: "net_null1", Mbufs: 4096})
	const n = 10 * 4096 // ten times the pool: every mbuf must come back
	frames := make([][]byte, dpdk.MaxBurst)
	sent := 0
	for sent < n {
		k := 0
		for ; k < len(frames); k++ {
			b := l.Buffer()
			if b == nil {
				t.Fatalf("Buffer = nil after %d sent: %+v", sent, l.Counters())
			}
			if len(b) != l.FrameSize() {
				t.Fatalf("len(Buffer) = %d; want %d", len(b), l.FrameSize())
			}
			binary.BigEndian.PutUint32(b, uint32(sent+k))
			frames[k] = b[:60]
		}
		if got := l.Transmit(frames[:k]); got != k {
			t.Fatalf("Transmit(%d) = %d", k, got)
		}
		sent += k
	}
	// Received frames from the null device: 60 bytes each, every mbuf
	// freed at the next Receive.
	got := 0
	for i := 0; i < 2*4096/dpdk.MaxBurst*10; i++ {
		k := l.Receive(frames)
		for _, f := range frames[:k] {
			if len(f) != 60 {
				t.Fatalf("received %d bytes; want 60", len(f))
			}
		}
		got += k
	}
	c := l.Counters()
	if c.TxFrames != n || c.TxBytes != 60*n || c.TxDropped != 0 || c.TxNoBuffer != 0 {
		t.Errorf("counters %+v; want %d frames of 60 bytes sent, no drop", c, n)
	}
	if c.RxFrames != uint64(got) || got == 0 || c.RxBytes != 60*uint64(got) {
		t.Errorf("counters %+v after %d received", c, got)
	}
	st, err := l.Stats()
	if err != nil || st.PortTxPackets != n || st.PortRxPackets != uint64(got) {
		t.Errorf("Stats = %+v, %v; want port tx %d, rx %d", st, err, n, got)
	}
}

func TestPortOpenOnceAndItsPoolKept(t *testing.T) {
	initEAL(t)
	l := open(t, dpdk.Config{Port: "net_null0"})
	if _, err := dpdk.Open(dpdk.Config{Port: "net_null0"}); !errors.Is(err, link.ErrConfig) || !strings.Contains(err.Error(), "open already") {
		t.Errorf("second Open of an open port = %v; want link.ErrConfig, open already", err)
	}
	f := l.Buffer()
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := l.Close(); !errors.Is(err, dpdk.ErrClosed) {
		t.Errorf("second Close = %v; want ErrClosed", err)
	}
	// After Close nothing is sent, received or lent, and nothing crashes.
	if n := l.Transmit([][]byte{f[:60]}); n != 0 || l.Buffer() != nil || l.Receive(make([][]byte, 4)) != 0 {
		t.Errorf("closed link: Transmit %d, Buffer, Receive; want nothing", n)
	}
	if _, err := dpdk.Open(dpdk.Config{Port: "net_null0", Mbufs: 4096}); !errors.Is(err, link.ErrConfig) || !strings.Contains(err.Error(), "keeps its pool") {
		t.Errorf("reopen with another pool size = %v; want link.ErrConfig, keeps its pool", err)
	}
	again := open(t, dpdk.Config{Port: "net_null0"})
	if b := again.Buffer(); b == nil {
		t.Errorf("reopened port lends no buffer")
	}
}

func TestTransmitDropsForeignFrames(t *testing.T) {
	initEAL(t)
	l := open(t, dpdk.Config{Port: "net_null0"})
	own := l.Buffer()
	for _, f := range [][][]byte{
		{make([]byte, 60)},            // Go memory
		{make([]byte, 4096)[100:160]}, // Go memory, large capacity
		{own[:0]},                     // empty
	} {
		if got := l.Transmit(f); got != 0 {
			t.Errorf("Transmit(foreign) = %d; want 0", got)
		}
	}
	st, _ := l.Stats()
	if c := l.Counters(); c.TxDropped != 3 || c.TxFrames != 0 || st.TxForeign != 2 {
		t.Errorf("counters %+v, stats %+v; want 3 dropped (2 foreign)", c, st)
	}
}

func fmtStats(st any) string { return fmt.Sprintf("%+v", st) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// BenchmarkNullTransmit: Buffer and Transmit of 64-byte frames in bursts of
// MaxBurst over a null device (the C calls and the link's own work, no
// I/O); one frame per op.
func BenchmarkNullTransmit(b *testing.B) {
	initEAL(b)
	l := open(b, dpdk.Config{Port: "net_null0"})
	frames := make([][]byte, dpdk.MaxBurst)
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		k := min(len(frames), b.N-sent)
		for i := range k {
			frames[i] = l.Buffer()[:64]
		}
		if got := l.Transmit(frames[:k]); got != k {
			b.Fatalf("Transmit(%d) = %d", k, got)
		}
		sent += k
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
}

// BenchmarkNullReceive: Receive bursts of MaxBurst from a null device
// (each C call frees the previous burst and receives the next); one frame
// per op.
func BenchmarkNullReceive(b *testing.B) {
	initEAL(b)
	l := open(b, dpdk.Config{Port: "net_null0"})
	frames := make([][]byte, dpdk.MaxBurst)
	b.ReportAllocs()
	b.ResetTimer()
	for got := 0; got < b.N; {
		got += l.Receive(frames)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
}
