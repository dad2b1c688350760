package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/protocol"
)

func mustMix(t testing.TB, s string) probe.Mix {
	m, err := probe.ParseMix(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Trial specs with TLS options and a mix, and results with a strain, TLS
// information and mix counts, come back through the wire as they went.
func TestVariantsRoundTrip(t *testing.T) {
	full := &TLSOptions{Insecure: true, Resume: true, CAFile: "/etc/ca.pem", CertFile: "c.pem", KeyFile: "k.pem", ServerName: "dut.example",
		MinVersion: "1.2", MaxVersion: "1.3", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, Curves: []string{"X25519", "P-256"}}
	for _, c := range []struct {
		name string
		tls  *TLSOptions
		mix  string
	}{
		{"plain", nil, ""},
		{"https defaults", &TLSOptions{}, ""},
		{"https every option", full, ""},
		{"mix", nil, "1KiB:50,16KiB:30,512KiB:20"},
		{"https and mix", &TLSOptions{Insecure: true}, "100:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := TrialSpec{ID: 3, Test: "tps", Load: 50, Probe: probeOpts("127.0.0.1:8443")}
			spec.Probe.TLS = c.tls
			if c.mix != "" {
				spec.Probe.Mix = mustMix(t, c.mix)
			}
			got, err := DecodeTrial(wire(t, TypeTrial, EncodeTrial(spec)))
			if err != nil || !reflect.DeepEqual(got, spec) {
				t.Fatalf("trial %+v, %v; want %+v", got, err, spec)
			}
		})
	}
	for _, c := range []struct {
		name string
		tr   capacity.Trial
	}{
		{"nothing", capacity.Trial{}},
		{"strain", capacity.Trial{Attempted: 9, GeneratorStrain: "CPU saturated: 97% of 2 cores"}},
		{"tls", capacity.Trial{Attempted: 9, TLS: &capacity.TLSInfo{Full: 7, Resumed: 2, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: "X25519MLKEM768", Mixed: true}}},
		{"tls without handshakes", capacity.Trial{Attempted: 9, Failed: 9, TLS: &capacity.TLSInfo{}}},
		{"mix", capacity.Trial{Attempted: 9, Mix: []capacity.MixCount{{Size: 1024, Count: 5, Failed: 1, Bytes: 5120}, {Size: 16, Count: 3, Bytes: 48}}}},
		{"options error", capacity.Trial{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Result{ID: 4, Trial: c.tr}
			if c.name == "options error" {
				r.Error, r.Options = "--tls-ca-file: open /nope: no such file", true
			}
			got, err := DecodeResult(wire(t, TypeResult, EncodeResult(r)))
			if err != nil || !reflect.DeepEqual(got, r) {
				t.Fatalf("result %+v, %v; want %+v", got, err, r)
			}
		})
	}
}

// The variants' decoders name the field they refuse: bad types, names too
// long or too many, a mix that does not parse, sizes out of range or
// twice, a result without its strain (a version 1 worker's).
func TestVariantsDecodeRefuses(t *testing.T) {
	spec := func() map[string]any {
		s := TrialSpec{ID: 1, Test: "tps", Load: 1, Probe: probeOpts("127.0.0.1:1")}
		s.Probe.TLS, s.Probe.Mix = &TLSOptions{Curves: []string{"X25519"}}, mustMix(t, "1:1")
		return EncodeTrial(s)
	}
	pr := func(m map[string]any) map[string]any { return m["probe"].(map[string]any) }
	tl := func(m map[string]any) map[string]any { return pr(m)["tls"].(map[string]any) }
	many := make([]any, MaxTLSNames+1)
	for i := range many {
		many[i] = "X25519"
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"tls not a map", func(m map[string]any) { pr(m)["tls"] = "yes" }, "probe.tls: data is string"},
		{"insecure not a bool", func(m map[string]any) { tl(m)["insecure"] = int64(1) }, "insecure: 1 is not a bool"},
		{"ca file missing", func(m map[string]any) { delete(tl(m), "ca_file") }, "ca_file: <nil> is not a string"},
		{"curves not a list", func(m map[string]any) { tl(m)["curves"] = "X25519" }, "curves: string is not a list"},
		{"too many curves", func(m map[string]any) { tl(m)["curves"] = many }, "curves: 65 names, more than 64"},
		{"curve not a string", func(m map[string]any) { tl(m)["curves"] = []any{int64(29)} }, "curves: name 1 is not a string"},
		{"curve too long", func(m map[string]any) { tl(m)["curves"] = []any{strings.Repeat("x", MaxName+1)} }, "curves: name 1"},
		{"control character", func(m map[string]any) { tl(m)["cipher_suites"] = []any{"a\nb"} }, "cipher_suites: name 1"},
		{"mix not a string", func(m map[string]any) { pr(m)["mix"] = int64(3) }, "mix: 3 is not a string"},
		{"mix does not parse", func(m map[string]any) { pr(m)["mix"] = "1KiB" }, `mix entry 1 "1KiB": want SIZE:WEIGHT`},
		{"mix too large", func(m map[string]any) { pr(m)["mix"] = "17MiB:1" }, "must be 1 to 16777216"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := spec()
			c.edit(m)
			_, err := DecodeTrial(m)
			if !errors.Is(err, ErrMessage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v; want %q", err, c.want)
			}
		})
	}
	result := func() map[string]any {
		return EncodeResult(Result{ID: 1, Trial: capacity.Trial{TLS: &capacity.TLSInfo{Full: 1, Version: "1.3"}, Mix: []capacity.MixCount{{Size: 1, Count: 1}}}})
	}
	mixAt := func(m map[string]any) map[string]any { return m["mix"].([]any)[0].(map[string]any) }
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"no strain", func(m map[string]any) { delete(m, "generator_strain") }, "generator_strain: <nil> is not a string"},
		{"no options flag", func(m map[string]any) { delete(m, "options") }, "options: <nil> is not a bool"},
		{"tls not a map", func(m map[string]any) { m["tls"] = []any{} }, "result.tls: data is []interface {}"},
		{"negative handshakes", func(m map[string]any) { m["tls"].(map[string]any)["full"] = int64(-1) }, "full: -1 is not a non-negative"},
		{"long version", func(m map[string]any) { m["tls"].(map[string]any)["version"] = strings.Repeat("1", MaxName+1) }, "version: 129 bytes, more than 128"},
		{"mix not a list", func(m map[string]any) { m["mix"] = map[string]any{} }, "mix: map[string]interface {} is not a list"},
		{"too many sizes", func(m map[string]any) {
			l := make([]any, probe.MaxMixEntries+1)
			for i := range l {
				l[i] = map[string]any{"size": int64(i + 1), "count": int64(0), "failed": int64(0), "bytes": int64(0)}
			}
			m["mix"] = l
		}, "mix: 65 sizes, more than 64"},
		{"size zero", func(m map[string]any) { mixAt(m)["size"] = int64(0) }, "mix[0]: size: 0 is not 1 to 16777216 bytes"},
		{"size too large", func(m map[string]any) { mixAt(m)["size"] = int64(probe.MaxObjectSize + 1) }, "size: 16777217 is not"},
		{"count missing", func(m map[string]any) { delete(mixAt(m), "count") }, "mix[0]: count: missing"},
		{"entry not a map", func(m map[string]any) { m["mix"] = []any{"x"} }, "mix[0]: data is string"},
		{"size twice", func(m map[string]any) { m["mix"] = append(m["mix"].([]any), mixAt(m)) }, "mix[1]: size: 1 is listed twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := result()
			c.edit(m)
			_, err := DecodeResult(m)
			if !errors.Is(err, ErrMessage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v; want %q", err, c.want)
			}
		})
	}
}

// Merge takes the first strain with its worker's name, sums the
// handshakes, names a parameter the workers disagree on "mixed", and sums
// the mix counts per size.
func TestMergeVariants(t *testing.T) {
	v13 := func(full, resumed int64, group string) *capacity.TLSInfo {
		return &capacity.TLSInfo{Full: full, Resumed: resumed, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: group}
	}
	for _, c := range []struct {
		name    string
		strains []string
		tls     []*capacity.TLSInfo
		mix     [][]capacity.MixCount
		strain  string
		wantTLS *capacity.TLSInfo
		wantMix []capacity.MixCount
	}{
		{name: "plain", strains: []string{"", ""}, tls: []*capacity.TLSInfo{nil, nil}},
		{name: "second strained", strains: []string{"", "pacing: 9 of 10 arrivals issued more than 50ms late"}, tls: []*capacity.TLSInfo{nil, nil},
			strain: "worker 2: pacing: 9 of 10 arrivals issued more than 50ms late"},
		{name: "first strain wins", strains: []string{"CPU saturated", "pacing"}, tls: []*capacity.TLSInfo{nil, nil}, strain: "worker 1: CPU saturated"},
		{name: "tls agree", strains: []string{"", ""}, tls: []*capacity.TLSInfo{v13(10, 2, "X25519"), v13(11, 0, "X25519")},
			wantTLS: v13(21, 2, "X25519")},
		{name: "tls group disagrees", strains: []string{"", "", ""}, tls: []*capacity.TLSInfo{v13(1, 0, "X25519"), v13(2, 0, "P-256"), v13(3, 0, "X25519")},
			wantTLS: &capacity.TLSInfo{Full: 6, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: Mixed, Mixed: true}},
		{name: "tls version disagrees", strains: []string{"", ""},
			tls:     []*capacity.TLSInfo{v13(1, 0, "X25519"), {Full: 1, Version: "1.2", Cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", Group: "X25519"}},
			wantTLS: &capacity.TLSInfo{Full: 2, Version: Mixed, Cipher: Mixed, Group: "X25519", Mixed: true}},
		{name: "a worker's own mixed flag", strains: []string{"", ""}, tls: []*capacity.TLSInfo{v13(1, 0, "X25519"), {Full: 1, Version: "1.3",
			Cipher: "TLS_AES_128_GCM_SHA256", Group: "X25519", Mixed: true}}, wantTLS: &capacity.TLSInfo{Full: 2, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: "X25519", Mixed: true}},
		{name: "a worker without handshakes", strains: []string{"", ""}, tls: []*capacity.TLSInfo{{}, v13(4, 0, "X25519")}, wantTLS: v13(4, 0, "X25519")},
		{name: "resumed 1.2 names no group", strains: []string{"", ""},
			tls:     []*capacity.TLSInfo{{Resumed: 3, Version: "1.2", Cipher: "C"}, {Full: 1, Version: "1.2", Cipher: "C", Group: "P-256"}},
			wantTLS: &capacity.TLSInfo{Full: 1, Resumed: 3, Version: "1.2", Cipher: "C", Group: "P-256"}},
		{name: "mix summed per size", strains: []string{"", ""}, tls: []*capacity.TLSInfo{nil, nil},
			mix: [][]capacity.MixCount{{{Size: 1024, Count: 5, Failed: 1, Bytes: 5120}, {Size: 16384, Count: 3, Bytes: 49152}},
				{{Size: 1024, Count: 4, Bytes: 4096}, {Size: 16384, Count: 2, Failed: 2, Bytes: 32768}}},
			wantMix: []capacity.MixCount{{Size: 1024, Count: 9, Failed: 1, Bytes: 9216}, {Size: 16384, Count: 5, Failed: 2, Bytes: 81920}}},
		{name: "mix sizes one worker lacks", strains: []string{"", ""}, tls: []*capacity.TLSInfo{nil, nil},
			mix:     [][]capacity.MixCount{{{Size: 1, Count: 1, Bytes: 1}}, {{Size: 2, Count: 1, Bytes: 2}, {Size: 1, Count: 2, Bytes: 2}}},
			wantMix: []capacity.MixCount{{Size: 1, Count: 3, Bytes: 3}, {Size: 2, Count: 1, Bytes: 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			parts := make([]Part, len(c.strains))
			for i := range parts {
				tr := capacity.Trial{Attempted: 1, GeneratorStrain: c.strains[i], TLS: c.tls[i]}
				if c.mix != nil {
					tr.Mix = c.mix[i]
				}
				parts[i] = Part{Worker: fmt.Sprintf("worker %d", i+1), Result: Result{Trial: tr}}
			}
			got, err := Merge(parts)
			if err != nil {
				t.Fatal(err)
			}
			if got.GeneratorStrain != c.strain || got.GeneratorLimit != "" || !reflect.DeepEqual(got.TLS, c.wantTLS) || !reflect.DeepEqual(got.Mix, c.wantMix) {
				t.Fatalf("merged strain %q tls %+v mix %+v; want %q %+v %+v", got.GeneratorStrain, got.TLS, got.Mix, c.strain, c.wantTLS, c.wantMix)
			}
		})
	}
	// Judged, a failed trial with a worker's strain is invalid and names
	// the worker; a passed one stands.
	tr, _ := Merge([]Part{{Worker: "worker 1", Result: Result{Trial: capacity.Trial{Load: 10, Attempted: 10, Failed: 5}}},
		{Worker: "worker 2", Result: Result{Trial: capacity.Trial{Attempted: 10, GeneratorStrain: "CPU saturated"}}}})
	tr.Load = 20
	capacity.Criteria{}.Judge(&tr)
	if tr.Verdict != capacity.Invalid || !strings.Contains(tr.Reason, "worker 2: CPU saturated") {
		t.Fatalf("strained failure judged %v %q", tr.Verdict, tr.Reason)
	}
	tr, _ = Merge([]Part{{Worker: "worker 1", Result: Result{Trial: capacity.Trial{Attempted: 10, GeneratorStrain: "CPU saturated"}}}})
	tr.Load = 10
	capacity.Criteria{}.Judge(&tr)
	if tr.Verdict != capacity.Pass {
		t.Fatalf("strained pass judged %v %q", tr.Verdict, tr.Reason)
	}
}

// The agent answers an options error (Result.Options) for an HTTPS trial
// it cannot build a configuration for, for a TLS builder's error (with its
// text), and for HTTPS or a mix on a runtime of its own (a data plane);
// with a builder, the builder gets the spec's options and target.
func TestAgentVariants(t *testing.T) {
	errCA := errors.New("--tls-ca-file: open /nope/ca.pem: no such file or directory")
	var gotOpts TLSOptions
	var gotAddr string
	for _, c := range []struct {
		name   string
		o      AgentOptions
		tls    *TLSOptions
		mix    string
		want   string
		wantOK bool
	}{
		{"no builder", AgentOptions{}, &TLSOptions{Insecure: true}, "", "this worker cannot build TLS configurations", false},
		{"builder error", AgentOptions{TLS: func(TLSOptions, string) (*tls.Config, error) { return nil, errCA }}, &TLSOptions{CAFile: "/nope/ca.pem"}, "",
			"open /nope/ca.pem", false},
		{"data plane https", AgentOptions{Runtime: RuntimeDataplane, Trial: func(TrialSpec, func(context.Context) error) (capacity.TrialFunc, error) {
			return nil, errors.New("ran")
		}}, &TLSOptions{}, "", "data plane runs neither HTTPS (-H https://) nor traffic mixes", false},
		{"data plane mix", AgentOptions{Runtime: RuntimeDataplane, Trial: func(TrialSpec, func(context.Context) error) (capacity.TrialFunc, error) {
			return nil, errors.New("ran")
		}}, nil, "1:1", "nor traffic mixes (--mix)", false},
		{"mix on concurrent", AgentOptions{}, nil, "1:1", "a traffic mix is for tps and throughput", false},
		{"builder used", AgentOptions{TLS: func(o TLSOptions, addr string) (*tls.Config, error) {
			gotOpts, gotAddr = o, addr
			return nil, errors.New("built")
		}}, &TLSOptions{ServerName: "dut", Curves: []string{"X25519"}}, "", "built", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s sink
			c.o.Limits = noLimits
			a := NewAgent(context.Background(), &s, c.o)
			spec := TrialSpec{ID: 6, Test: "concurrent", Load: 1, Probe: probeOpts("127.0.0.1:9")}
			spec.Probe.TLS = c.tls
			if c.mix != "" {
				spec.Probe.Mix = mustMix(t, c.mix)
			}
			a.Handle(trialMsg(spec))
			a.Wait()
			m, ok := s.find(TypeResult)
			if !ok {
				t.Fatal("no result")
			}
			res, err := DecodeResult(m.Data.(*protocol.Custom).Data)
			if err != nil || res.ID != 6 || !res.Options || !strings.Contains(res.Error, c.want) {
				t.Fatalf("result %+v, %v; want an options error %q", res, err, c.want)
			}
			if c.wantOK && (gotAddr != "127.0.0.1:9" || !reflect.DeepEqual(gotOpts, *c.tls)) {
				t.Fatalf("builder got %+v %q", gotOpts, gotAddr)
			}
		})
	}
}

// A controller returns ErrWorkerOptions (an ErrWorker) when a worker
// cannot honour the trial's options, at once rather than at the deadline.
func TestControllerWorkerOptions(t *testing.T) {
	c := listen(t, 1, 30*time.Second, nil)
	startWorker(t, c, "wa", nil) // no TLS builder
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	o := probeOpts("127.0.0.1:9")
	o.TLS = &TLSOptions{Insecure: true}
	start := time.Now()
	_, err := c.Trial(ctx, "cps", 10, false, o)
	if !errors.Is(err, ErrWorkerOptions) || !errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "worker 1 (wa): this worker cannot build TLS configurations") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > Deadline("cps", 10, o, 1)/2 {
		t.Fatalf("the options error took %v", d)
	}
}

// A concurrent trial over TLS gets a handshake's connect timeout more per
// round of its window; rate trials' deadlines do not depend on it.
func TestDeadlineTLS(t *testing.T) {
	o := probeOpts("127.0.0.1:1")
	o.Window = 10
	withTLS := o
	withTLS.TLS = &TLSOptions{}
	// 200 connections over 2 workers: 10 rounds of 10 each, twice.
	if got, want := Deadline("concurrent", 200, withTLS, 2)-Deadline("concurrent", 200, o, 2), 20*o.ConnectTimeout; got != want {
		t.Fatalf("TLS adds %v; want %v", got, want)
	}
	if Deadline("cps", 200, withTLS, 2) != Deadline("cps", 200, o, 2) {
		t.Fatal("a rate trial's deadline depends on TLS")
	}
}

// BenchmarkMergeVariants: Merge of two workers' HTTPS mix trials (the
// TLS and mix merge beside the histograms').
func BenchmarkMergeVariants(b *testing.B) {
	s := make([]time.Duration, 10000)
	for i := range s {
		s[i] = time.Duration(i) * time.Microsecond
	}
	h := Histogram(s)
	mix := []capacity.MixCount{{Size: 1024, Count: 500, Bytes: 512000}, {Size: 16384, Count: 300, Bytes: 4915200}, {Size: 524288, Count: 200, Bytes: 104857600}}
	tr := capacity.Trial{Attempted: 1000, TLS: &capacity.TLSInfo{Full: 32, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: "X25519"}, Mix: mix}
	parts := []Part{{"w1", Result{Trial: tr, Latency: h}}, {"w2", Result{Trial: tr, Latency: h}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Merge(parts); err != nil {
			b.Fatal(err)
		}
	}
}

// The agent keeps the TLS configuration while the options and target stay
// the same (its session cache with it: --tls-resume resumes across trials
// as standalone) and builds a new one when they change.
func TestAgentKeepsTLSConfig(t *testing.T) {
	var built []string
	var s sink
	a := NewAgent(context.Background(), &s, AgentOptions{Limits: noLimits, TLS: func(o TLSOptions, addr string) (*tls.Config, error) {
		built = append(built, o.ServerName+" "+addr)
		return &tls.Config{InsecureSkipVerify: true, ClientSessionCache: tls.NewLRUClientSessionCache(8)}, nil //nolint:gosec // a test's closed port
	}})
	closed := "127.0.0.1:1" // nothing listens: every connect is refused at once
	for i, name := range []string{"a", "a", "b", "b"} {
		spec := TrialSpec{ID: int64(i + 1), Test: "cps", Load: 20, Probe: probeOpts(closed)}
		spec.Probe.TLS = &TLSOptions{ServerName: name, Resume: true}
		a.Handle(trialMsg(spec))
		a.Wait()
	}
	if want := []string{"a " + closed, "b " + closed}; !reflect.DeepEqual(built, want) {
		t.Fatalf("built %q; want %q", built, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if r, err := DecodeResult(m.Data.(*protocol.Custom).Data); err != nil || r.Options || r.Trial.Attempted == 0 {
			t.Fatalf("result %+v, %v", r, err)
		}
	}
}
