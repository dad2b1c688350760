package protocol

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestLocustMasterMergesOurStats sends stats messages encoded by this package
// through the real Locust 2.12.1 master code (the worker_report listener,
// percentiles, console tables) in one Python process. It is the end-to-end
// check of int bucket keys and nil fields (None in locust/stats.py,
// StatsEntry): they must not break Locust's sorting and min/max logic. A
// payload with str bucket keys is included as a negative control.
func TestLocustMasterMergesOurStats(t *testing.T) {
	py := testpeer.RequirePython(t, "msgpack", "locust.stats")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	full := benchReport(50)
	empty := &StatsReport{Total: StatsEntry{Name: "Aggregated", StartTime: 1796011105.5}, UserClassesCount: map[string]int64{"A": 0}, UserCount: 0}
	withExact := benchReport(2)
	withExact.Total.Exact = []byte{1, 2, 3}
	withExact.Stats[0].Exact = bytes.Repeat([]byte{7}, 300)
	cases := map[string]*StatsReport{"full": full, "empty": empty, "exact": withExact}

	var in bytes.Buffer
	for _, id := range []string{"full", "empty", "exact"} {
		b, err := Encode(Message{Type: TypeStats, Data: cases[id], NodeID: "go_worker_0123"})
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]string{"id": id, "hex": hex.EncodeToString(b)})
		in.Write(append(line, '\n'))
	}
	// Negative control: the same empty report with a str bucket key.
	bad := env("stats", report(mp(A(1), entry(4, S("num_requests"), I(2), S("total_response_time"), F(3),
		S("response_times"), mp(M(2), S("140"), I(1), I(3), I(1)), S("max_response_time"), F(140))), entry(0)))
	line, _ := json.Marshal(map[string]string{"id": "strkeys", "hex": hex.EncodeToString(bad)})
	in.Write(append(line, '\n'))

	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "pylocust_stats.py"))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pylocust_stats.py: %v\n%s", err, stderr.String())
	}
	type result struct {
		ID          string   `json:"id"`
		OK          bool     `json:"ok"`
		Error       string   `json:"error"`
		NumRequests int64    `json:"num_requests"`
		NumFailures int64    `json:"num_failures"`
		P95raw      any      `json:"p95"`
		Min         *float64 `json:"min"`
		Max         float64  `json:"max"`
		Entries     int      `json:"entries"`
		Errors      int64    `json:"errors"`
		Table       string   `json:"table"`
	}
	got := map[string]result{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "DONE ") {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("pylocust_stats.py output %q: %v", l, err)
		}
		got[r.ID] = r
	}

	for id, rep := range cases {
		r, ok := got[id]
		switch {
		case !ok:
			t.Errorf("%s: no result from Locust", id)
			continue
		case !r.OK:
			t.Errorf("%s: Locust's master failed on our stats message:\n%s", id, r.Error)
			continue
		}
		tot := rep.Total
		if r.NumRequests != tot.NumRequests || r.NumFailures != tot.NumFailures {
			t.Errorf("%s: Locust total requests/failures = %d/%d; want %d/%d", id, r.NumRequests, r.NumFailures, tot.NumRequests, tot.NumFailures)
		}
		if p := asFloat(r.P95raw); p != float64(locustPercentile(CountMap(tot.ResponseTimes), tot.NumRequests, 0.95)) {
			t.Errorf("%s: Locust p95 = %v; want %d", id, p, locustPercentile(CountMap(tot.ResponseTimes), tot.NumRequests, 0.95))
		}
		if (r.Min == nil) != (tot.MinResponseTime == nil) || (r.Min != nil && *r.Min != *tot.MinResponseTime) {
			t.Errorf("%s: Locust min = %v; want %v (nil must stay nil, not 0)", id, r.Min, tot.MinResponseTime)
		}
		if r.Max != tot.MaxResponseTime {
			t.Errorf("%s: Locust max = %v; want %v", id, r.Max, tot.MaxResponseTime)
		}
		var occ int64
		for _, e := range rep.Errors {
			occ += e.Occurrences
		}
		if r.Entries != len(rep.Stats) || r.Errors != occ {
			t.Errorf("%s: Locust has %d entries, %d error occurrences; want %d, %d", id, r.Entries, r.Errors, len(rep.Stats), occ)
		}
		if !strings.Contains(r.Table, "Aggregated") {
			t.Errorf("%s: Locust's stats table lacks the Aggregated row:\n%s", id, r.Table)
		}
		for _, e := range rep.Stats {
			if !strings.Contains(r.Table, e.Name) {
				t.Errorf("%s: Locust's stats table lacks %q", id, e.Name)
				break
			}
		}
	}
	if r := got["strkeys"]; r.OK || !strings.Contains(r.Error, "not supported between") {
		t.Errorf("negative control: Locust accepted str bucket keys (ok=%v, error %q); the check has no teeth", r.OK, r.Error)
	}
}

// locustPercentile is Locust's calculate_response_time_percentile
// (locust/stats.py at 2.12.1): walk buckets from the top until at most
// floor(N·p) requests remain above.
func locustPercentile(rt map[int64]int64, n int64, p float64) int64 {
	keys := make([]int64, 0, len(rt))
	for k := range rt {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	k := int64(float64(n) * p)
	var processed int64
	for _, key := range keys {
		processed += rt[key]
		if n-processed <= k {
			return key
		}
	}
	return 0
}

func asFloat(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return 0
}
