package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPhasesCSV runs cicada standalone headless against the built-in
// target and reads <prefix>_phases.csv: the request's connect phase has
// one sample per user connection (keep-alive: 3 users, 3 connections),
// TTFB and body one per request, and the times are plausible against
// Locust's response time in _stats.csv (connect ≤ TTFB ≤ response time).
func TestPhasesCSV(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /}]\n")
	prefix := filepath.Join(t.TempDir(), "OUT")
	var out bytes.Buffer
	var errb syncBuffer // tables and log from two goroutines, as on os.Stderr
	if code := run([]string{"-f", path, "--headless", "-u", "3", "-r", "100", "-t", "2s", "-H", srv.URL(), "--csv", prefix}, &out, &errb); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errb.String())
	}
	read := func(suffix string) [][]string {
		data, err := os.ReadFile(prefix + suffix)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", suffix, err)
		}
		return rows
	}
	statsRows := read("_stats.csv")
	var requests int
	var avgRT float64
	for _, r := range statsRows[1:] {
		if r[1] == "/" {
			requests, _ = strconv.Atoi(r[2])
			avgRT, _ = strconv.ParseFloat(r[5], 64)
		}
	}
	if requests < 10 {
		t.Fatalf("%d requests; want at least 10", requests)
	}
	rows := read("_phases.csv")
	if got := rows[0]; len(got) != 11 || got[2] != "Phase" || got[4] != "Average (ms)" {
		t.Fatalf("header %q", got)
	}
	type ph struct {
		count    int
		avg, max float64
	}
	got := map[string]ph{}
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[3])
		avg, _ := strconv.ParseFloat(r[4], 64)
		mx, _ := strconv.ParseFloat(r[10], 64)
		got[r[1]+" "+r[2]] = ph{n, avg, mx}
	}
	if _, ok := got["/ dns"]; ok {
		t.Errorf("a DNS phase for an IP address host: %v", got)
	}
	if _, ok := got["/ tls"]; ok {
		t.Errorf("a TLS phase for http: %v", got)
	}
	conn, ttfb, body := got["/ connect"], got["/ ttfb"], got["/ body"]
	if conn.count != 3 || conn.avg <= 0 {
		t.Errorf("connect %+v; want 3 samples (one per user's keep-alive connection) above 0", conn)
	}
	if ttfb.count != requests || body.count != requests {
		t.Errorf("ttfb %d and body %d samples; want %d, one per request", ttfb.count, body.count, requests)
	}
	if ttfb.avg <= 0 || ttfb.avg > avgRT+0.01 || conn.max > ttfb.max+0.01 {
		t.Errorf("ttfb avg %v ms (max %v), connect max %v, response time avg %v ms: want 0 < ttfb ≤ response time, connect ≤ ttfb",
			ttfb.avg, ttfb.max, conn.max, avgRT)
	}
	if agg := got["Aggregated ttfb"]; agg.count != requests {
		t.Errorf("Aggregated ttfb %+v; want %d samples", agg, requests)
	}
}
