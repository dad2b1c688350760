package stats

import (
	"errors"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func pms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// TestPhasesThroughReports records phases on two workers' Recorders, sends
// the reports through the protocol's encoding and merges them on a master:
// counts, averages, extremes and percentiles per entry and in the
// Aggregated row are the exact ones, within the histogram's resolution.
func TestPhasesThroughReports(t *testing.T) {
	now := func() time.Time { return time.Unix(1700000000, 0) }
	w1, w2 := NewRecorder(now), NewRecorder(now)
	// w1: /a, 10 new connections (dns 1 ms, connect 2 ms, tls 3 ms), TTFB
	// 10..19 ms, body 1 ms; w2: /a 10 reused (TTFB 20..29 ms, body 2 ms),
	// /b one refused connect (no response: no TTFB).
	for i := range 10 {
		w1.RecordWithPhases("GET", "/a", pms(30), 5, "", &Phases{DNS: pms(1), Connect: pms(2), TLS: pms(3), TTFB: pms(float64(10 + i)), Body: pms(1),
			HasDNS: true, HasConnect: true, HasTLS: true})
		w2.RecordWithPhases("GET", "/a", pms(30), 5, "", &Phases{TTFB: pms(float64(20 + i)), Body: pms(2)})
	}
	w2.RecordWithPhases("GET", "/b", pms(4), 0, "ConnectionRefusedError(111, 'Connection refused')", &Phases{Connect: pms(4), HasConnect: true})
	w2.Record("GET", "/c", pms(1), 0, "") // no phases at all
	m := New(now)
	for _, w := range []*Recorder{w1, w2} {
		b, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: w.Report(nil, 0)})
		if err != nil {
			t.Fatal(err)
		}
		decode := protocol.Decode
		if w == w2 {
			decode = protocol.DecodePooled // the master's receive path
		}
		msg, err := decode(b)
		if err != nil {
			t.Fatal(err)
		}
		m.Merge(msg.Data.(*protocol.StatsReport))
		msg.Data.(*protocol.StatsReport).Release()
	}
	snap := m.Snapshot()
	byName := map[string]*PhaseStats{}
	for _, e := range snap.Entries {
		byName[e.Name] = e.Phases
	}
	byName["Aggregated"] = snap.Total.Phases
	type want struct {
		count    uint64
		avg, p50 time.Duration
		max      time.Duration
	}
	for _, tc := range []struct {
		name  string
		phase int
		want  want
	}{
		{"/a", PhaseDNS, want{10, pms(1), pms(1), pms(1)}},
		{"/a", PhaseConnect, want{10, pms(2), pms(2), pms(2)}},
		{"/a", PhaseTLS, want{10, pms(3), pms(3), pms(3)}},
		{"/a", PhaseTTFB, want{20, pms(19.5), pms(19), pms(29)}},
		{"/a", PhaseBody, want{20, pms(1.5), pms(1), pms(2)}},
		{"/b", PhaseConnect, want{1, pms(4), pms(4), pms(4)}},
		{"/b", PhaseTTFB, want{0, 0, 0, 0}},
		{"Aggregated", PhaseConnect, want{11, time.Duration(float64(pms(24)) / 11), pms(2), pms(4)}},
		{"Aggregated", PhaseTTFB, want{20, pms(19.5), pms(19), pms(29)}},
	} {
		ps := byName[tc.name]
		if ps == nil {
			t.Errorf("%s: no phases", tc.name)
			continue
		}
		got := ps[tc.phase]
		tol := func(a, b time.Duration) bool {
			d := a - b
			return d < 0 && -d > b/200+time.Microsecond || d > b/200+time.Microsecond
		}
		if got.Count != tc.want.count || tol(got.Avg, tc.want.avg) || tol(got.P50, tc.want.p50) || tol(got.Max, tc.want.max) {
			t.Errorf("%s %s: %+v; want count %d avg %v p50 %v max %v", tc.name, PhaseNames[tc.phase], got, tc.want.count, tc.want.avg, tc.want.p50, tc.want.max)
		}
	}
	if byName["/c"] != nil {
		t.Errorf("/c recorded no phases but has %+v", byName["/c"])
	}
	// A second report window carries only the new samples.
	w1.RecordWithPhases("GET", "/a", pms(5), 0, "", &Phases{TTFB: pms(5), Body: pms(0)})
	rep := w1.Report(nil, 0)
	ps, err := DecodePhases(rep.Stats[0].Phases)
	if err != nil || ps[PhaseTTFB].Count != 1 || ps[PhaseConnect].Count != 0 {
		t.Errorf("second window: %+v, %v; want one TTFB sample only", ps, err)
	}
}

// TestPhasesMalformed: a bad "cicada_phases" is counted and ignored.
func TestPhasesMalformed(t *testing.T) {
	good := func() []byte {
		var d phaseData
		d.record(&Phases{TTFB: pms(3), Body: pms(1)})
		return d.appendEncoded(nil)
	}()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},
		{"version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"length beyond", []byte{1, 0, 200}},
		{"bad histogram", []byte{1, 0, 1, 7, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodePhases(tc.b); !errors.Is(err, ErrMalformedPhases) {
				t.Errorf("DecodePhases(%v) = %v; want ErrMalformedPhases", tc.b, err)
			}
			m := New(nil)
			min := 1.0
			method := "GET"
			m.Merge(&protocol.StatsReport{Stats: []protocol.StatsEntry{{Name: "/x", Method: &method, NumRequests: 1, MinResponseTime: &min, Phases: tc.b}}})
			snap := m.Snapshot()
			if snap.MalformedPhases != 1 || snap.Entries[0].Phases != nil {
				t.Errorf("malformed %d, phases %+v; want 1 and none", snap.MalformedPhases, snap.Entries[0].Phases)
			}
		})
	}
}

// FuzzDecodePhases: any input is an error or a summary that encodes back
// to an equivalent summary; never a panic.
func FuzzDecodePhases(f *testing.F) {
	var d phaseData
	d.record(&Phases{DNS: pms(1), Connect: pms(2), TLS: pms(3), TTFB: pms(40), Body: pms(5), HasDNS: true, HasConnect: true, HasTLS: true})
	d.record(&Phases{TTFB: pms(4000), Body: pms(1)})
	f.Add(d.appendEncoded(nil))
	f.Add([]byte{1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var x phaseData
		if err := x.addEncoded(b); err != nil {
			if !errors.Is(err, ErrMalformedPhases) {
				t.Fatalf("error %v does not wrap ErrMalformedPhases", err)
			}
			return
		}
		var y phaseData
		if err := y.addEncoded(x.appendEncoded(nil)); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if *x.summary() != *y.summary() {
			t.Fatalf("summary changed through re-encoding: %+v vs %+v", x.summary(), y.summary())
		}
	})
}

// BenchmarkRecordWithPhases is BenchmarkRecord's fixed clock with phases:
// the cost the phases add to a request's recording.
func BenchmarkRecordWithPhases(b *testing.B) {
	t0 := time.Unix(1700000000, 0)
	r := NewRecorder(func() time.Time { return t0 })
	p := &Phases{TTFB: pms(3), Body: pms(1)}
	r.RecordWithPhases("GET", "/a", pms(4), 10, "", p)
	b.ReportAllocs()
	for b.Loop() {
		r.RecordWithPhases("GET", "/a", pms(4), 10, "", p)
	}
}
