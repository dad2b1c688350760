package capacity

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"
)

// A strain on passing trials lets the search go on; the first failed
// trial with a strain stops it INVALID, the highest pass a lower bound.
func TestSearchStrainInvalidatesFailuresOnly(t *testing.T) {
	const genLimit = 800 // the generator falls behind above it
	trial := func(_ context.Context, load float64) (Trial, error) {
		tr := Trial{Attempted: int64(load), Achieved: load}
		if load > 400 {
			tr.GeneratorStrain = "pacing: late" // strained, yet delivering
		}
		if load > genLimit {
			tr.Achieved = genLimit
			tr.GeneratorStrain = "CPU saturated: 99% of 1 cores"
		}
		return tr, nil
	}
	r, err := Search{Start: 100, Max: 10000, Criteria: Criteria{MinAchieved: 0.95}}.Run(context.Background(), trial)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome() != "invalid" || r.Max != 800 || !strings.HasPrefix(r.Invalid, "CPU saturated") {
		t.Fatalf("outcome %s max %v invalid %q; want invalid at 800 by CPU", r.Outcome(), r.Max, r.Invalid)
	}
	if v := r.Trials[3]; v.Load != 800 || v.Verdict != Pass || !strings.Contains(v.Reason, "strained") {
		t.Fatalf("trial 4 %+v; want the strained pass at 800", v)
	}
}

func TestReportVariants(t *testing.T) {
	mix := []MixCount{{Size: 1024, Count: 5, Bytes: 5120}, {Size: 65536, Count: 2, Failed: 1, Bytes: 131072}}
	rep := &Report{Test: "throughput", Title: "HTTPS throughput", RFC: "RFC 9411 7.7", Unit: "Mbit/s", Result: Result{Max: 10, Found: true, Trials: []Trial{
		{Load: 10, Verdict: Pass, TLS: &TLSInfo{Full: 8, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: "X25519"}, Mix: mix},
		{Load: 20, Verdict: Fail, TLS: &TLSInfo{Full: 8, Resumed: 2, Version: "1.3", Cipher: "TLS_AES_128_GCM_SHA256", Group: "X25519"}},
	}}}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TLS negotiated: version 1.3, cipher suite TLS_AES_128_GCM_SHA256, key exchange X25519; 16 full and 2 resumed handshakes in the search",
		"TLS at trial 1: 8 full, 0 resumed handshakes",
		"Mix at trial 1 (8 transactions, 136192 body bytes): 1024 B 62.5% (5 ok, 0 failed, 5120 bytes), 65536 B 37.5% (2 ok, 1 failed, 131072 bytes)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("csv %v %q", err, rows)
	}
	n := len(CSVHeader)
	if got := rows[1][n-4:]; got[0] != "8" || got[1] != "0" || got[2] != "1.3 TLS_AES_128_GCM_SHA256 X25519" || got[3] != "1024 B: 5 ok 0 failed 5120 bytes; 65536 B: 2 ok 1 failed 131072 bytes" {
		t.Fatalf("trial 1's TLS and mix cells %q", got)
	}
	if got := rows[2][n-4:]; got[1] != "2" || got[3] != "" {
		t.Fatalf("trial 2's cells %q", got)
	}
	b.Reset()
	if err := rep.WriteHTML(&b); err != nil || !strings.Contains(b.String(), "<h3>TLS and traffic mix</h3>") {
		t.Fatalf("html %v", err)
	}
}
