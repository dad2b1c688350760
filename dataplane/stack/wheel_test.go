package stack

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
)

// wheelStack returns a client stack of n records whose wheel fires into
// fired (record -> the now it fired at).
func wheelStack(t testing.TB, n int) (*Stack, map[uint32]int64) {
	t.Helper()
	a, _, err := pipe.New(pipe.Config{Frames: 64})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ServerIP: serverIP, PortMin: 10000, PortMax: uint16(10000 + n - 1)})
	if err != nil {
		t.Fatal(err)
	}
	fired := map[uint32]int64{}
	s.wheelFn = func(i uint32, now int64) {
		if _, dup := fired[i]; dup {
			t.Fatalf("record %d fired twice", i)
		}
		fired[i] = now
	}
	s.wheelAdvance(0)
	return s, fired
}

func TestWheel(t *testing.T) {
	ms := int64(time.Millisecond)
	tests := []struct {
		name   string
		at     []int64 // due times, record k at at[k]
		cancel []int   // records disarmed before advancing
		steps  []int64 // advance to each, in order
	}{
		{"level 0", []int64{1 * ms, 5 * ms, 200 * ms}, nil, []int64{3 * ms, 100 * ms, 300 * ms}},
		{"same slot", []int64{7 * ms, 7 * ms, 7*ms + 1}, nil, []int64{8 * ms, 9 * ms}},
		{"cascade level 1", []int64{300 * ms, 1000 * ms, 60_000 * ms}, nil, []int64{299 * ms, 301 * ms, 59_000 * ms, 61_000 * ms}},
		{"cascade level 2, 900 s", []int64{900_000 * ms, 3_600_000 * ms}, nil, []int64{899_000 * ms, 901_000 * ms, 3_700_000 * ms}},
		{"overflow, 6 hours", []int64{6 * 3600_000 * ms, 1 * ms}, nil, []int64{2 * ms, 5 * 3600_000 * ms, 7 * 3600_000 * ms}},
		{"disarm", []int64{10 * ms, 500 * ms, 100_000 * ms, 6 * 3600_000 * ms}, []int{0, 1, 2, 3}, []int64{7 * 3600_000 * ms}},
		{"big jump fires all", []int64{1 * ms, 400 * ms, 70_000 * ms}, nil, []int64{80_000 * ms}},
		{"past time fires next tick", []int64{-5 * ms}, nil, []int64{0, 2 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fired := wheelStack(t, len(tt.at))
			for k, at := range tt.at {
				s.wheelArm(uint32(k), 0, at)
			}
			cancelled := map[int]bool{}
			for _, k := range tt.cancel {
				s.disarm(uint32(k))
				cancelled[k] = true
			}
			for _, now := range tt.steps {
				s.wheelAdvance(now)
				for k, at := range tt.at {
					got, ok := fired[uint32(k)]
					tick := max(at, 1) // a past time is due at the first tick
					due := (tick+wheelTick-1)>>wheelShift<<wheelShift <= now
					switch {
					case cancelled[k] && ok:
						t.Errorf("disarmed record %d fired at %v", k, time.Duration(got))
					case cancelled[k]:
					case due && !ok:
						t.Errorf("at %v: record %d due at %v did not fire", time.Duration(now), k, time.Duration(at))
					case !due && ok:
						t.Errorf("at %v: record %d due at %v fired early", time.Duration(now), k, time.Duration(at))
					}
				}
			}
			if s.wheel.n != 0 && len(fired)+len(tt.cancel) == len(tt.at) {
				t.Errorf("wheel holds %d entries after every timer fired or was disarmed", s.wheel.n)
			}
		})
	}
}

// FuzzWheel drives the wheel with arms, disarms and advances decoded from
// the input and checks it against a simple reference: a timer fires at the
// first advance whose tick reaches its own, never earlier, exactly once.
func FuzzWheel(f *testing.F) {
	f.Add([]byte{0, 1, 10, 0, 2, 1, 200, 0, 3, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 255, 255, 0, 5, 0, 100, 2, 255, 255, 2, 255, 255, 2, 0, 40})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const n = 16
		s, fired := wheelStack(t, n)
		due := map[uint32]int64{} // armed record -> its tick
		now := int64(0)
		for len(ops) >= 3 {
			op, k, arg := ops[0]%3, uint32(ops[1])%n, int64(binary.BigEndian.Uint16(ops[1:3]))
			ops = ops[3:]
			switch op {
			case 0: // arm at now + arg^2 ms (up to about 50 days)
				at := now + arg*arg*int64(time.Millisecond)
				delete(fired, k)
				s.wheelArm(k, now, at)
				due[k] = max((at+wheelTick-1)>>wheelShift, s.wheel.now+1)
			case 1:
				s.disarm(k)
				delete(due, k)
			case 2: // advance by arg^2 * 16 ms
				now += arg * arg * 16 * int64(time.Millisecond)
				clear(fired)
				s.wheelAdvance(now)
				for r := range fired {
					if _, armed := due[r]; !armed {
						t.Fatalf("record %d fired but was not armed", r)
					}
				}
				for r, e := range due {
					_, ok := fired[r]
					if want := e <= now>>wheelShift; ok != want {
						t.Fatalf("at tick %d: record %d due at tick %d fired %v; want %v", now>>wheelShift, r, e, ok, want)
					}
					if ok {
						delete(due, r)
					}
				}
			}
		}
		if s.wheel.n != len(due) {
			t.Fatalf("wheel counts %d entries; reference %d", s.wheel.n, len(due))
		}
	})
}

// BenchmarkWheel900s: 1,000,000 records each waiting 900 s (the seed
// scenario's wait), spread over the first 900 s; one op advances the clock
// by 1 ms and re-arms every record that fired for another 900 s. The cost
// per op follows the timers due (about 1.1 per ms), not the records.
func BenchmarkWheel900s(b *testing.B) {
	a, _, err := pipe.New(pipe.Config{Frames: 64})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ClientIPs: 20, PortMin: 10000, PortMax: 59999, ServerIP: 0x0b000001})
	if err != nil {
		b.Fatal(err)
	}
	const wait = int64(900 * time.Second)
	now := int64(0)
	fired := 0
	s.wheelFn = func(i uint32, t int64) { fired++; s.wheelArm(i, t, t+wait) }
	s.wheelAdvance(now)
	n := s.Conns()
	for i := range n {
		s.wheelArm(uint32(i), now, int64(i)*(wait/int64(n))+1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now += int64(time.Millisecond)
		s.wheelAdvance(now)
	}
	b.ReportMetric(float64(fired)/float64(b.N), "fired/op")
	b.ReportMetric(float64(n), "records")
	if s.wheel.n != n {
		b.Fatalf("wheel holds %d; want %d", s.wheel.n, n)
	}
}
