package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/protocol"
)

// wire sends data through the protocol's encoder and decoder, as the
// transport does.
func wire(t testing.TB, typ string, data map[string]any) any {
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: &protocol.Custom{Data: data}, NodeID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := protocol.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return m.Data.(*protocol.Custom).Data
}

func TestMessagesRoundTrip(t *testing.T) {
	spec := TrialSpec{ID: 7, Test: "tps", Load: 123.5, Probe: ProbeOptions{Addr: "127.0.0.1:80", Host: "h", Path: "/x", HTTP: true,
		Duration: time.Second, ConnectTimeout: 2 * time.Second, Timeout: 3 * time.Second, Hold: 4, LagTolerance: 5, Conns: 6, Window: 7, ObjectSize: 8, CPUBusy: 0.9}}
	got, err := DecodeTrial(wire(t, TypeTrial, EncodeTrial(spec)))
	if err != nil || !reflect.DeepEqual(got, spec) {
		t.Fatalf("trial %+v, %v", got, err)
	}
	res := Result{ID: 7, Error: "e", Latency: Histogram([]time.Duration{time.Millisecond}), Trial: capacity.Trial{Duration: time.Second, Attempted: 5, Failed: 1,
		Achieved: 4.5, Bytes: 9, SecondRound: 3, SecondRoundFailed: 1, Errors: map[string]int64{"timeout": 1}, GeneratorLimit: "g", Max: time.Millisecond}}
	gotR, err := DecodeResult(wire(t, TypeResult, EncodeResult(res)))
	if err != nil || !reflect.DeepEqual(gotR, res) {
		t.Fatalf("result %+v, %v", gotR, err)
	}
	r := Ready{Version: 1, Runtime: RuntimeKernel, Refuse: "x"}
	if gotReady, err := DecodeReady(wire(t, TypeReady, EncodeReady(r))); err != nil || gotReady != r {
		t.Fatalf("ready %+v, %v", gotReady, err)
	}
	if id, abort, err := DecodeID(TypeAbort, wire(t, TypeAbort, EncodeID(3, true))); err != nil || id != 3 || !abort {
		t.Fatalf("id %d %v %v", id, abort, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := func() map[string]any {
		return EncodeResult(Result{ID: 1, Trial: capacity.Trial{Attempted: 2, Failed: 1}})
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]any) any
		want string
	}{
		{"not a map", func(map[string]any) any { return "x" }, "data is string"},
		{"missing id", func(m map[string]any) any { delete(m, "id"); return m }, "id: missing"},
		{"negative count", func(m map[string]any) any { m["attempted"] = int64(-1); return m }, "attempted: -1 is not a non-negative"},
		{"NaN achieved", func(m map[string]any) any { m["achieved"] = nan(); return m }, "achieved: NaN"},
		{"failed above attempted", func(m map[string]any) any { m["failed"] = int64(3); return m }, "failed counts above attempted"},
		{"long text", func(m map[string]any) any { m["error"] = strings.Repeat("x", MaxText+1); return m }, "error: 4097 bytes"},
		{"bad error count", func(m map[string]any) any { m["errors"] = map[string]any{"timeout": "many"}; return m }, "timeout: many"},
		{"too many kinds", func(m map[string]any) any {
			e := map[string]any{}
			for i := range MaxErrorKinds + 1 {
				e[strings.Repeat("k", i+1)] = int64(1)
			}
			m["errors"] = e
			return m
		}, "kinds, more than"},
		{"latency not bytes", func(m map[string]any) any { m["latency"] = "x"; return m }, "latency: string"},
		{"latency too large", func(m map[string]any) any { m["latency"] = make([]byte, MaxLatency+1); return m }, "latency: 262145 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeResult(c.edit(good()))
			if !errors.Is(err, ErrMessage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v; want %q", err, c.want)
			}
		})
	}
	if _, err := DecodeTrial(map[string]any{"id": int64(1), "test": "cps", "load": 1.0, "probe": "x"}); !errors.Is(err, ErrMessage) {
		t.Fatalf("probe not a map: %v", err)
	}
}

func nan() float64 { var z float64; return z / z }

// FuzzDecodeResult: any payload decodes, with every decoder of the bench
// exchange, to an error or a bounded value, never a panic; a decoded trial
// or result encodes back to the same value.
func FuzzDecodeResult(f *testing.F) {
	for _, r := range []Result{{ID: 1, Trial: capacity.Trial{Attempted: 3, Failed: 1, Errors: map[string]int64{"reset": 1}}, Latency: Histogram([]time.Duration{5})}, {Error: "busy"},
		{ID: 2, Error: "x", Options: true, Trial: capacity.Trial{Attempted: 2, GeneratorStrain: "CPU", TLS: &capacity.TLSInfo{Full: 2, Version: "1.3", Cipher: "C", Group: "X25519"},
			Mix: []capacity.MixCount{{Size: 1024, Count: 1, Bytes: 1024}, {Size: 1, Failed: 1}}}}} {
		b, err := protocol.Encode(protocol.Message{Type: TypeResult, Data: &protocol.Custom{Data: EncodeResult(r)}, NodeID: "n"})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	spec, _ := protocol.Encode(protocol.Message{Type: TypeTrial, Data: &protocol.Custom{Data: EncodeTrial(TrialSpec{ID: 2, Test: "cps", Load: 10})}, NodeID: "n"})
	f.Add(spec)
	spec, _ = protocol.Encode(protocol.Message{Type: TypeTrial, Data: &protocol.Custom{Data: EncodeTrial(TrialSpec{ID: 3, Test: "tps", Load: 10, Probe: ProbeOptions{
		TLS: &TLSOptions{Insecure: true, CAFile: "ca.pem", Curves: []string{"X25519", "P-256"}}, Mix: probe.Mix{{Size: 1024, Weight: 3}, {Size: 7, Weight: 1}}}})}, NodeID: "n"})
	f.Add(spec)
	for _, m := range []map[string]any{EncodeHello("cps"), EncodeReady(Ready{Version: 1, Runtime: RuntimeKernel}), EncodeID(3, true)} {
		b, _ := protocol.Encode(protocol.Message{Type: TypeReady, Data: &protocol.Custom{Data: m}, NodeID: "n"})
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := protocol.Decode(b)
		if err != nil {
			return
		}
		cu, ok := m.Data.(*protocol.Custom)
		if !ok {
			return
		}
		if s, err := DecodeTrial(cu.Data); err == nil {
			if s.Load < 0 || len(s.Test) > MaxText || len(s.Probe.Mix) > probe.MaxMixEntries || (s.Probe.TLS != nil && (len(s.Probe.TLS.Curves) > MaxTLSNames ||
				len(s.Probe.TLS.CipherSuites) > MaxTLSNames)) {
				t.Fatalf("trial %+v", s)
			}
			if back, err := DecodeTrial(wire(t, TypeTrial, EncodeTrial(s))); err != nil || !reflect.DeepEqual(back, s) {
				t.Fatalf("trial round trip %+v, %v", back, err)
			}
		}
		if rd, err := DecodeReady(cu.Data); err == nil && (len(rd.Runtime) > MaxText || len(rd.Refuse) > MaxText || rd.Version < 0) {
			t.Fatalf("ready %+v", rd)
		}
		if test, err := DecodeHello(cu.Data); err == nil && len(test) > MaxText {
			t.Fatalf("hello test of %d bytes", len(test))
		}
		if id, _, err := DecodeID(TypeGo, cu.Data); err == nil && id < 0 {
			t.Fatalf("id %d", id)
		}
		r, err := DecodeResult(cu.Data)
		if err != nil {
			return
		}
		if r.Trial.Failed > r.Trial.Attempted || len(r.Latency) > MaxLatency || len(r.Trial.Errors) > MaxErrorKinds || r.Trial.Achieved < 0 ||
			len(r.Trial.Mix) > probe.MaxMixEntries || (r.Trial.TLS != nil && (len(r.Trial.TLS.Version) > MaxName || r.Trial.TLS.Full < 0)) {
			t.Fatalf("result %+v", r)
		}
		back, err := DecodeResult(wire(t, TypeResult, EncodeResult(r)))
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("result round trip %+v, %v; was %+v", back, err, r)
		}
		_, _ = Merge([]Part{{Worker: "w", Result: r}})
	})
}
