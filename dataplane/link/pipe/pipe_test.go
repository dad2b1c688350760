package pipe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
)

// send transmits n one-byte frames numbered from first.
func send(t *testing.T, e *End, first, n int) {
	t.Helper()
	for i := range n {
		b := e.Buffer()
		if b == nil {
			t.Fatalf("Buffer() = nil at frame %d", first+i)
		}
		b[0] = byte(first + i)
		if got := e.Transmit([][]byte{b[:1]}); got != 1 {
			t.Fatalf("Transmit = %d; want 1", got)
		}
	}
}

func recvAll(e *End, calls int) []byte {
	var out []byte
	frames := make([][]byte, 64)
	for range calls {
		n := e.Receive(frames)
		for _, f := range frames[:n] {
			out = append(out, f[0])
		}
	}
	return out
}

func TestPipeInOrder(t *testing.T) {
	a, b, err := New(Config{Frames: 8})
	if err != nil {
		t.Fatal(err)
	}
	send(t, a, 0, 8)
	if got := a.Buffer(); got != nil {
		t.Errorf("Buffer() with all 8 in flight = %d bytes; want nil", len(got))
	}
	if got := recvAll(b, 1); !bytes.Equal(got, []byte{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("received %v; want [0 1 2 3 4 5 6 7]", got)
	}
	// The burst is returned to the pool by the next Receive.
	b.Receive(nil)
	send(t, a, 8, 8)
	if c := a.Counters(); c.TxFrames != 16 || c.TxNoBuffer != 1 {
		t.Errorf("Counters() = %+v; want TxFrames 16, TxNoBuffer 1", c)
	}
	if c := b.Counters(); c.RxFrames != 8 {
		t.Errorf("b.Counters().RxFrames = %d; want 8", c.RxFrames)
	}
}

func TestPipeForeignFrameDropped(t *testing.T) {
	a, _, _ := New(Config{Frames: 2})
	if got := a.Transmit([][]byte{make([]byte, 10)}); got != 0 {
		t.Errorf("Transmit(foreign) = %d; want 0", got)
	}
	if c := a.Counters(); c.TxDropped != 1 {
		t.Errorf("TxDropped = %d; want 1", c.TxDropped)
	}
}

func TestPipeInjection(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want func(got []byte, inj Counters) error
	}{
		{"loss", Config{Loss: 0.5, Seed: 1}, func(got []byte, inj Counters) error {
			if uint64(len(got))+inj.Lost != 200 || inj.Lost == 0 {
				return fmt.Errorf("received %d, lost %d; want sum 200, some lost", len(got), inj.Lost)
			}
			return nil
		}},
		{"duplicate", Config{Duplicate: 0.5, Seed: 2}, func(got []byte, inj Counters) error {
			if uint64(len(got)) != 200+inj.Duplicated || inj.Duplicated == 0 {
				return fmt.Errorf("received %d, duplicated %d; want 200+duplicated", len(got), inj.Duplicated)
			}
			return nil
		}},
		{"reorder", Config{Reorder: 0.5, Seed: 3}, func(got []byte, inj Counters) error {
			swaps := 0
			for i := 1; i < len(got); i++ {
				if got[i] < got[i-1] {
					swaps++
				}
			}
			if len(got) != 200 || swaps == 0 || inj.Reordered == 0 {
				return fmt.Errorf("received %d with %d inversions, reordered %d; want 200, some", len(got), swaps, inj.Reordered)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first []byte
			for run := range 2 {
				a, b, err := New(tt.cfg)
				if err != nil {
					t.Fatal(err)
				}
				send(t, a, 0, 200)
				got := recvAll(b, 10)
				if err := tt.want(got, a.Injected()); err != nil {
					t.Error(err)
				}
				if run == 0 {
					first = got
				} else if string(got) != string(first) {
					t.Errorf("second run with seed %d differs: %v vs %v", tt.cfg.Seed, got, first)
				}
			}
		})
	}
}

func TestPipeDelay(t *testing.T) {
	a, b, _ := New(Config{Delay: 3})
	send(t, a, 0, 1)
	for call := 1; call <= 3; call++ {
		if n := b.Receive(make([][]byte, 4)); (n == 1) != (call == 3) {
			t.Errorf("Receive call %d = %d frames; want 1 only at call 3", call, n)
		}
	}
}

func TestPipeConfigRefused(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"loss above 1", Config{Loss: 1.5}},
		{"negative reorder", Config{Reorder: -0.1}},
		{"negative delay", Config{Delay: -1}},
		{"frame too small for mtu", Config{FrameSize: 1000}},
		{"tiny mtu", Config{MTU: 20}},
		{"same macs", Config{MACA: [6]byte{1}, MACB: [6]byte{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := New(tt.cfg); !errors.Is(err, link.ErrConfig) {
				t.Errorf("New(%+v) = %v; want link.ErrConfig", tt.cfg, err)
			}
		})
	}
}

func TestPipeAllocatesNothing(t *testing.T) {
	a, b, _ := New(Config{Frames: 64, Loss: 0.1, Duplicate: 0.1, Reorder: 0.1})
	tx, rx := make([][]byte, 0, 16), make([][]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		tx = tx[:0]
		for range 16 {
			if f := a.Buffer(); f != nil {
				tx = append(tx, f[:60])
			}
		}
		a.Transmit(tx)
		b.Receive(rx)
	})
	if allocs != 0 {
		t.Errorf("transmit+receive allocs = %v; want 0", allocs)
	}
}

// TestPipeTwoGoroutines drives the ends from two goroutines (run with
// -race): every frame arrives once, in order.
func TestPipeTwoGoroutines(t *testing.T) {
	const n = 2000
	a, b, _ := New(Config{Frames: 64})
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; i < n; {
			if time.Now().After(deadline) {
				done <- fmt.Errorf("sender stuck at frame %d", i)
				return
			}
			f := a.Buffer()
			if f == nil {
				runtime.Gosched()
				continue
			}
			binary.BigEndian.PutUint32(f, uint32(i))
			a.Transmit([][]byte{f[:4]})
			i++
		}
		done <- nil
	}()
	frames := make([][]byte, 16)
	deadline := time.Now().Add(10 * time.Second)
	for next := 0; next < n; {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d frames before the deadline", next, n)
		}
		k := b.Receive(frames)
		for _, f := range frames[:k] {
			if got := int(binary.BigEndian.Uint32(f)); got != next {
				t.Fatalf("frame %d carries %d; want %d", next, got, next)
			}
			next++
		}
		if k == 0 {
			runtime.Gosched()
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
