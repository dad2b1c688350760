package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func TestBucketKey(t *testing.T) {
	tests := []struct {
		ms   float64
		want int64
	}{
		{0, 0}, {0.4999, 0}, {0.5, 0}, {0.5001, 1}, {1.5, 2}, {2.5, 2}, {3.49, 3}, {3.5, 4},
		{29.76, 30}, {99.49, 99}, {99.5, 100}, {99.9, 100},
		{100, 100}, {104.999, 100}, {105, 100}, {115, 120}, {145, 140}, {145.00001, 150}, {147, 150}, {155, 160},
		{999.4, 1000}, {999.9, 1000}, {1000, 1000}, {1050, 1000}, {1150, 1200}, {3432, 3400}, {3450, 3400},
		{3550, 3600}, {9950, 10000}, {9949, 9900}, {10000, 10000}, {12500, 12000}, {13500, 14000},
		{14500, 14000}, {58760, 59000}, {99500, 100000}, {100500, 100000}, {3_600_000.5, 3_600_000},
	}
	for _, tt := range tests {
		rt := time.Duration(math.Round(tt.ms * 1e6))
		if got := BucketKey(rt); got != tt.want {
			t.Errorf("BucketKey(%vms) = %d; want %d", tt.ms, got, tt.want)
		}
	}
	if got := BucketKey(-time.Second); got != 0 {
		t.Errorf("BucketKey(-1s) = %d; want 0", got)
	}
}

// pyRound is Python's round(t, -digits) on the exact binary value of the
// float t = ns/1e6, computed with big.Rat as CPython's correctly rounded
// dtoa does.
func pyRound(ns int64) int64 {
	t := float64(ns) / 1e6
	var unit int64
	switch {
	case t < 100:
		unit = 1
	case t < 1000:
		unit = 10
	case t < 10000:
		unit = 100
	default:
		unit = 1000
	}
	r := new(big.Rat).SetFloat64(t)
	r.Quo(r, new(big.Rat).SetInt64(unit))
	fl := new(big.Int).Quo(r.Num(), r.Denom()) // floor for positive
	frac := new(big.Rat).Sub(r, new(big.Rat).SetInt(fl))
	switch frac.Cmp(big.NewRat(1, 2)) {
	case 1:
		fl.Add(fl, big.NewInt(1))
	case 0:
		if fl.Bit(0) == 1 {
			fl.Add(fl, big.NewInt(1))
		}
	}
	return fl.Int64() * unit
}

// TestBucketKeyMatchesPythonRound checks the integer-nanosecond rule against
// Python's rounding of the float milliseconds, around every tie and at
// random.
func TestBucketKeyMatchesPythonRound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []int64
	for _, unit := range []int64{1e6, 10e6, 100e6, 1000e6} {
		for q := int64(0); q < 120; q++ {
			tie := q*unit + unit/2
			for d := int64(-2); d <= 2; d++ {
				samples = append(samples, tie+d)
			}
		}
	}
	for range 20000 {
		samples = append(samples, rng.Int64N(int64(200*time.Second)))
	}
	for _, ns := range samples {
		if ns < 0 {
			continue
		}
		if got, want := BucketKey(time.Duration(ns)), pyRound(ns); got != want {
			t.Errorf("BucketKey(%dns) = %d; Python round gives %d", ns, got, want)
		}
	}
}

func TestRTHist(t *testing.T) {
	var h rtHist
	keys := []int64{0, 5, 99, 100, 990, 1000, 9900, 10000, 99000, 100000, 147, -3, 3600000}
	for i, k := range keys {
		h.add(k, int64(i+1))
	}
	h.add(5, 10)
	got := h.appendBuckets(nil)
	if len(got) != len(keys) {
		t.Fatalf("appendBuckets: %d buckets; want %d", len(got), len(keys))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Key >= got[i].Key {
			t.Fatalf("appendBuckets not ascending: %v", got)
		}
	}
	c := h.counts()
	if m := protocol.CountMap(c); !protocol.CountsSorted(c) || len(c) != len(got) || m[5] != 12 || m[147] != 11 || m[-3] != 12 || m[1000] != 6 {
		t.Errorf("counts = %v", c)
	}
	h.reset()
	if !h.empty() || len(h.appendBuckets(nil)) != 0 {
		t.Errorf("reset left %v", h.appendBuckets(nil))
	}
}

func TestSecCounts(t *testing.T) {
	var s secCounts
	s.keepAll = true
	for sec := int64(100); sec < 140; sec++ {
		s.add(sec, sec, 1)
	}
	s.add(101, 1, 0) // long out of the ring: spills
	reqs, fails := s.counts()
	if rm := protocol.CountMap(reqs); !protocol.CountsSorted(reqs) || !protocol.CountsSorted(fails) ||
		len(reqs) != 40 || len(fails) != 40 || rm[101] != 102 || rm[139] != 139 {
		t.Errorf("keepAll counts = %v, %v", reqs, fails)
	}
	if r, f := s.get(101); r != 102 || f != 1 {
		t.Errorf("get(101) = %d, %d; want 102, 1", r, f)
	}
	var d secCounts // master: old seconds are dropped
	for sec := int64(100); sec < 140; sec++ {
		d.add(sec, 1, 0)
	}
	d.add(101, 5, 0)
	if r, _ := d.get(101); r != 0 {
		t.Errorf("dropping ring kept second 101: %d", r)
	}
	if r, _ := d.get(130); r != 1 {
		t.Errorf("dropping ring lost second 130: %d", r)
	}
}
