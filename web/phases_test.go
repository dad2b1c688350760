package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// phaseSnapshot is a master snapshot with one entry's phases: 4 requests,
// 2 of them on new connections.
func phaseSnapshot(t *testing.T) *stats.Snapshot {
	t.Helper()
	now := func() time.Time { return time.Unix(1700000000, 0) }
	r := stats.NewRecorder(now)
	for i := range 4 {
		p := &stats.Phases{TTFB: time.Duration(10+i) * time.Millisecond, Body: time.Millisecond}
		if i < 2 {
			p.Connect, p.HasConnect = 2*time.Millisecond, true
		}
		r.RecordWithPhases("GET", "/a", 20*time.Millisecond, 1, "", p)
	}
	r.Record("GET", "/plain", time.Millisecond, 1, "")
	s := stats.New(now)
	s.Merge(r.Report(nil, 0))
	return s.Snapshot()
}

func TestPhaseMetrics(t *testing.T) {
	var p promWriter
	appendPhaseMetrics(&p, phaseSnapshot(t))
	out := string(p.b)
	for _, want := range []string{
		"# TYPE cicada_request_phase_seconds summary\n",
		`cicada_request_phase_seconds{method="GET",name="/a",phase="connect",quantile="0.5"} 0.002` + "\n",
		`cicada_request_phase_seconds_count{method="GET",name="/a",phase="connect"} 2` + "\n",
		`cicada_request_phase_seconds_count{method="GET",name="/a",phase="ttfb"} 4` + "\n",
		`cicada_request_phase_seconds_count{method="",name="Aggregated",phase="body"} 4` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	for _, absent := range []string{`phase="dns"`, `phase="tls"`, `name="/plain"`} {
		if strings.Contains(out, absent) {
			t.Errorf("metrics have %s, which no request recorded:\n%s", absent, out)
		}
	}
	var empty promWriter
	appendPhaseMetrics(&empty, stats.New(nil).Snapshot())
	if len(empty.b) != 0 {
		t.Errorf("metrics without phases: %q; want nothing", empty.b)
	}
}

func TestPhaseJSON(t *testing.T) {
	snap := phaseSnapshot(t)
	var ps *stats.PhaseStats
	for _, e := range snap.Entries {
		if e.Name == "/a" {
			ps = e.Phases
		}
	}
	var got map[string]map[string]float64
	if err := json.Unmarshal([]byte(phaseJSON(ps)), &got); err != nil {
		t.Fatalf("%s: %v", phaseJSON(ps), err)
	}
	if len(got) != 3 || got["connect"]["count"] != 2 || got["ttfb"]["count"] != 4 || got["ttfb"]["avg"] != 11.5 || got["body"]["max"] != 1 {
		t.Errorf("phase JSON %v", got)
	}
}

// TestReportPhases: the HTML report has a Request Phases table when the
// stats carry phases, and none otherwise.
func TestReportPhases(t *testing.T) {
	for _, withPhases := range []bool{true, false} {
		snap := phaseSnapshot(t)
		if !withPhases {
			snap = stats.New(nil).Snapshot()
		}
		var b strings.Builder
		if err := WriteReport(&b, ReportData{Snapshot: snap}); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		has := strings.Contains(page, `<h2>Request Phases</h2>`)
		if has != withPhases {
			t.Errorf("phases %v: report has the phases table: %v", withPhases, has)
		}
		if withPhases && !strings.Contains(page, `<td>GET</td><td>/a</td><td>ttfb</td><td class="num">4</td><td class="num">11.50</td>`) {
			t.Errorf("report lacks /a's ttfb row:\n%s", page)
		}
	}
}
