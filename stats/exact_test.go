package stats

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestExactIndexBounds(t *testing.T) {
	// Every value lies in its bucket, buckets tile the range in order, and
	// a bucket is at most 1/128 of its lower bound wide.
	prev := -1
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 257, 1000, 65535, 65536, 1e6, 3.6e9, 1<<36 - 1} {
		idx := exactIndex(v)
		lo, w := exactBounds(idx)
		if v < lo || v >= lo+w {
			t.Errorf("value %d in bucket %d = [%d, %d)", v, idx, lo, lo+w)
		}
		if lo >= 128 && float64(w)/float64(lo) > 1.0/128 {
			t.Errorf("bucket %d too wide: %d at %d", idx, w, lo)
		}
		if idx < prev {
			t.Errorf("index not monotonic at %d", v)
		}
		prev = idx
	}
	for idx := 1; idx < exactNumBucket; idx++ {
		lo, _ := exactBounds(idx)
		plo, pw := exactBounds(idx - 1)
		if plo+pw != lo {
			t.Fatalf("gap between buckets %d and %d", idx-1, idx)
		}
		if exactIndex(lo) != idx {
			t.Fatalf("exactIndex(%d) = %d; want %d", lo, exactIndex(lo), idx)
		}
	}
	if got := exactIndex(math.MaxUint64); got != exactNumBucket-1 {
		t.Errorf("exactIndex(max) = %d", got)
	}
	if hour := uint64(time.Hour / time.Microsecond); exactIndex(hour) == exactNumBucket-1 {
		t.Errorf("one hour is not resolved")
	}
}

// nearestRank is the true nearest-rank percentile of sorted samples.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	r := int(math.Ceil(p * float64(len(sorted))))
	r = min(max(r, 1), len(sorted))
	return sorted[r-1]
}

// TestExactPercentileError is the property test of the stated error bound:
// for random samples of several distributions, every percentile is within
// ExactAbsoluteError + ExactRelativeError·v of the true nearest-rank value.
func TestExactPercentileError(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	dists := map[string]func() time.Duration{
		"uniform-µs": func() time.Duration { return time.Duration(rng.Int64N(int64(200 * time.Microsecond))) },
		"lognormal":  func() time.Duration { return time.Duration(math.Exp(rng.NormFloat64()*1.5+15) + 1) },
		"bimodal": func() time.Duration {
			return time.Duration(rng.Int64N(2)*int64(time.Second) + rng.Int64N(int64(time.Millisecond)))
		},
		"hours":       func() time.Duration { return time.Duration(rng.Int64N(int64(time.Hour))) },
		"exponential": func() time.Duration { return time.Duration(rng.ExpFloat64() * 5e6) },
	}
	ps := []float64{0, 0.001, 0.1, 0.25, 0.5, 0.66, 0.9, 0.95, 0.99, 0.999, 0.9999, 1}
	for name, gen := range dists {
		for trial := range 20 {
			n := 1 + rng.IntN(5000)
			var h exactHist
			samples := make([]time.Duration, n)
			for i := range samples {
				samples[i] = gen()
				h.record(toMicros(samples[i]))
			}
			slices.Sort(samples)
			dec, err := DecodeExact(h.appendEncoded(nil))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				got, ok := dec.Percentile(p)
				want := nearestRank(samples, p)
				tol := float64(ExactAbsoluteError) + ExactRelativeError*float64(want) + 1
				if !ok || math.Abs(float64(got-want)) > tol {
					t.Errorf("%s trial %d n=%d p=%v: got %v, want %v ± %v", name, trial, n, p, got, want, time.Duration(tol))
				}
			}
			if dec.Count() != uint64(n) {
				t.Errorf("Count = %d; want %d", dec.Count(), n)
			}
		}
	}
}

func TestExactMergeAndEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var all, a, b exactHist
	for i := range 3000 {
		us := uint64(rng.ExpFloat64() * 20000)
		all.record(us)
		if i%3 == 0 {
			a.record(us)
		} else {
			b.record(us)
		}
	}
	var m exactHist
	if err := m.addEncoded(a.appendEncoded(nil)); err != nil {
		t.Fatal(err)
	}
	if err := m.addEncoded(b.appendEncoded(nil)); err != nil {
		t.Fatal(err)
	}
	var m2 exactHist
	m2.merge(&b)
	m2.merge(&a)
	want := all.appendEncoded(nil)
	if got := m.appendEncoded(nil); !bytes.Equal(got, want) {
		t.Errorf("merge of encodings differs from one histogram")
	}
	if got := m2.appendEncoded(nil); !bytes.Equal(got, want) {
		t.Errorf("merge differs from one histogram")
	}
	t.Logf("3000 samples encode to %d bytes", len(want))
	var empty exactHist
	if enc := empty.appendEncoded(nil); !bytes.Equal(enc, []byte{exactVersion}) {
		t.Errorf("empty encoding = %x", enc)
	}
	if err := m.addEncoded([]byte{exactVersion}); err != nil {
		t.Errorf("adding an empty histogram: %v", err)
	}
}

func TestDecodeExactMalformed(t *testing.T) {
	var h exactHist
	h.record(10)
	h.record(5000)
	good := h.appendEncoded(nil)
	tests := map[string][]byte{
		"empty":             {},
		"version":           {2},
		"truncated":         good[:len(good)-1],
		"no buckets":        {1, 10, 0},
		"zero count":        {1, 10, 0, 10, 0},
		"index range":       {1, 10, 0, 0xff, 0xff, 0x03, 1},
		"min outside":       {1, 11, 0, 10, 1},
		"max outside":       {1, 10, 5, 10, 1},
		"varint overflow":   {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"trailing garbage":  append(append([]byte{}, good...), 0x80),
		"max overflows u64": {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0, 1},
	}
	for name, b := range tests {
		_, err := DecodeExact(b)
		if !errors.Is(err, ErrMalformedExact) {
			t.Errorf("DecodeExact(%s %x) = %v; want ErrMalformedExact", name, b, err)
		}
		var m exactHist
		m.record(7)
		before := m.appendEncoded(nil)
		if m.addEncoded(b) == nil || !bytes.Equal(m.appendEncoded(nil), before) {
			t.Errorf("addEncoded(%s) changed the histogram or succeeded", name)
		}
	}
	if _, err := DecodeExact(good); err != nil {
		t.Errorf("DecodeExact(good) = %v", err)
	}
}

// FuzzDecodeExact: the decoder never panics, and whatever it accepts adds
// to a histogram and re-encodes to an equivalent histogram.
func FuzzDecodeExact(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{0, 1, 2, 50, 1000} {
		var h exactHist
		for range n {
			h.record(uint64(rng.ExpFloat64() * 1e5))
		}
		f.Add(h.appendEncoded(nil))
	}
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0xff, 0x1d, 1})
	// Malformed after some valid buckets (undone by addEncoded).
	f.Add([]byte{1, 10, 0, 10, 1, 5, 2, 0x80})
	f.Add([]byte{1, 10, 100, 10, 1, 5, 2})
	f.Add([]byte{1, 10, 0, 10, 1, 5, 0})
	var pre exactHist // what addEncoded adds to
	for _, us := range []uint64{3, 3, 900, 12000, 5e6} {
		pre.record(us)
	}
	preEnc := pre.appendEncoded(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		// addEncoded (one pass, undone on error) must agree with
		// DecodeExact (validation first) on validity, leave the target
		// unchanged on error and otherwise add exactly the buckets that
		// DecodeExact sees.
		var got exactHist
		if err := got.addEncoded(preEnc); err != nil {
			t.Fatal(err)
		}
		addErr := got.addEncoded(b)
		dec, err := DecodeExact(b)
		if (err == nil) != (addErr == nil) {
			t.Fatalf("DecodeExact error %v, addEncoded error %v", err, addErr)
		}
		if addErr != nil && !errors.Is(addErr, ErrMalformedExact) {
			t.Fatalf("addEncoded error %v does not wrap ErrMalformedExact", addErr)
		}
		want := pre.appendEncoded(nil)
		if err == nil && dec.Count() > 0 {
			var ref exactHist
			ref.merge(&pre)
			dec.v.each(func(idx int, n uint64) bool {
				ref.addN(idx, n)
				return true
			})
			ref.mergeMinMax(dec.v.count, dec.v.min, dec.v.max)
			want = ref.appendEncoded(nil)
		}
		if g := got.appendEncoded(nil); !bytes.Equal(g, want) {
			t.Fatalf("addEncoded gave %x, want %x", g, want)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformedExact) {
				t.Fatalf("error %v does not wrap ErrMalformedExact", err)
			}
			return
		}
		var h exactHist
		if err := h.addEncoded(b); err != nil {
			t.Fatalf("DecodeExact accepted what addEncoded rejects: %v", err)
		}
		re := h.appendEncoded(nil)
		dec2, err := DecodeExact(re)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if dec.Count() != dec2.Count() || dec.Min() != dec2.Min() || dec.Max() != dec2.Max() {
			t.Fatalf("round trip changed count/min/max")
		}
		for _, p := range []float64{0, 0.5, 0.99, 1} {
			a, _ := dec.Percentile(p)
			b, _ := dec2.Percentile(p)
			if a != b {
				t.Fatalf("round trip changed p%v: %v vs %v", p, a, b)
			}
		}
	})
}
