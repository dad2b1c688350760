package stats

import (
	"errors"
	"testing"
	"time"
)

func TestExactSum(t *testing.T) {
	enc := func(us ...uint64) []byte {
		var h exactHist
		for _, v := range us {
			h.record(v)
		}
		return h.appendEncoded(nil)
	}
	a := enc(100, 200, 300)
	b := enc(1000, 2000, 50_000, 60_000)
	var s ExactSum
	if err := s.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(b); err != nil {
		t.Fatal(err)
	}
	if s.Count() != 7 {
		t.Fatalf("count %d", s.Count())
	}
	if p, _ := s.Percentile(1); p != 60*time.Millisecond {
		t.Fatalf("max %v", p)
	}
	if err := s.Sub(b); err != nil {
		t.Fatal(err)
	}
	// The maximum's bucket is [300, 301] µs: its upper bound stands in.
	if p, ok := s.Percentile(1); !ok || p != 301*time.Microsecond {
		t.Fatalf("max after Sub %v %v", p, ok)
	}
	if p, ok := s.Percentile(0); !ok || p != 100*time.Microsecond {
		t.Fatalf("min after Sub %v %v", p, ok)
	}
	// Subtracting what is not there is refused, s unchanged.
	for _, bad := range [][]byte{b, enc(100, 100), {2}, nil} {
		if err := s.Sub(bad); !errors.Is(err, ErrMalformedExact) {
			t.Fatalf("Sub(%x) = %v", bad, err)
		}
	}
	if s.Count() != 3 {
		t.Fatalf("count %d after refused Subs", s.Count())
	}
	// The minimum's sample gone, the bound becomes its bucket's.
	if err := s.Sub(enc(100)); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Percentile(0); p != 200*time.Microsecond {
		t.Fatalf("min %v", p)
	}
	if err := s.Sub(enc(200, 300)); err != nil || s.Count() != 0 {
		t.Fatalf("%v, %d", err, s.Count())
	}
	if _, ok := s.Percentile(0.5); ok {
		t.Fatal("empty sum has a percentile")
	}
	if _, err := DecodeExact(s.Encoded()); err != nil {
		t.Fatal(err)
	}
}

func FuzzExactSumSub(f *testing.F) {
	f.Add([]byte{1, 100, 100, 100, 1}, []byte{1, 100, 0, 100, 1})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s ExactSum
		if s.Add(a) != nil {
			return
		}
		before := s.Count()
		if err := s.Sub(b); err != nil {
			if s.Count() != before {
				t.Fatal("failed Sub changed the sum")
			}
			return
		}
		if _, err := DecodeExact(s.Encoded()); err != nil {
			t.Fatalf("sum after Sub does not decode: %v", err)
		}
	})
}
