package stats

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/protocol"
)

func TestTerminalNameWidth(t *testing.T) {
	tests := []struct{ cols, want int }{{200, 80}, {160, 80}, {120, 40}, {81, 1}, {80, -1}, {20, -1}}
	for _, tt := range tests {
		if got := TerminalNameWidth(tt.cols); got != tt.want {
			t.Errorf("TerminalNameWidth(%d) = %d; want %d", tt.cols, got, tt.want)
		}
	}
}

func TestErrorTexts(t *testing.T) {
	tests := []struct {
		text, report, reportStandalone, csv, csvStandalone string
	}{
		{"CatchResponseError('Got 200')", "GET /: 'Got 200'", "GET /: CatchResponseError('Got 200')",
			`"CatchResponseError('Got 200')"`, "CatchResponseError('Got 200')"},
		{"HTTPError('404')", `GET /: "HTTPError('404')"`, "GET /: HTTPError('404')", `"HTTPError('404')"`, "HTTPError('404')"},
		{"CatchResponseError(", "GET /: ", "GET /: CatchResponseError(", `'CatchResponseError('`, "CatchResponseError("},
		{"E(<X object at 0xdead>)", "GET /: 'E(<X object at 0xdead>)'", "GET /: E(<X object at 0xdead>)",
			"'E(<X object at 0x....>)'", "E(<X object at 0x....>)"},
	}
	for _, tt := range tests {
		e := &ErrorStats{Method: "GET", Name: "/", Error: tt.text}
		if got := (Format{}).ReportText(e); got != tt.report {
			t.Errorf("ReportText(%q) = %q; want %q", tt.text, got, tt.report)
		}
		if got := (Format{Standalone: true}).ReportText(e); got != tt.reportStandalone {
			t.Errorf("standalone ReportText(%q) = %q; want %q", tt.text, got, tt.reportStandalone)
		}
		if got := (Format{}).CSVText(e); got != tt.csv {
			t.Errorf("CSVText(%q) = %q; want %q", tt.text, got, tt.csv)
		}
		if got := (Format{Standalone: true}).CSVText(e); got != tt.csvStandalone {
			t.Errorf("standalone CSVText(%q) = %q; want %q", tt.text, got, tt.csvStandalone)
		}
	}
}

func TestExactFormat(t *testing.T) {
	clk := newFakeClock(100)
	s := New(clk.now)
	r := NewRecorder(clk.now)
	for i := 1; i <= 100; i++ {
		r.Record("GET", "/", msDur(float64(i)*1.5), 0, "")
	}
	clk.set(103)
	s.Merge(r.Report(nil, 0))
	snap := s.Snapshot()
	var approx, exact bytes.Buffer
	must(t, WritePercentileTable(&approx, snap))
	must(t, Format{Exact: true}.WritePercentileTable(&exact, snap))
	if !strings.HasPrefix(approx.String(), "Response time percentiles (approximated)\n") ||
		!strings.HasPrefix(exact.String(), "Response time percentiles (exact)\n") {
		t.Fatalf("titles:\n%s\n%s", approx.String(), exact.String())
	}
	// 50% of 1.5, 3, ..., 150 ms: Locust walks down to the 50th largest,
	// 76.5 in bucket 76 (half to even); exact: the 50th smallest, 75 ms.
	row := strings.Split(exact.String(), "\n")[3]
	if f := strings.Fields(row); f[2] != "75" || f[12] != "150" {
		t.Errorf("exact row = %q", row)
	}
	row = strings.Split(approx.String(), "\n")[3]
	if f := strings.Fields(row); f[2] != "76" || f[12] != "150" {
		t.Errorf("approximated row = %q", row)
	}
	// With a Python worker the exact table falls back to Locust's.
	m := "GET"
	s.Merge(&protocol.StatsReport{
		Stats: []protocol.StatsEntry{{Name: "/", Method: &m, StartTime: 100, NumRequests: 1, TotalResponseTime: 5,
			MaxResponseTime: 5, MinResponseTime: ptr(5.0), ResponseTimes: protocol.Counts(map[int64]int64{5: 1})}},
		Total: protocol.StatsEntry{Name: "Aggregated", StartTime: 100},
	})
	exact.Reset()
	must(t, Format{Exact: true}.WritePercentileTable(&exact, s.Snapshot()))
	if !strings.HasPrefix(exact.String(), "Response time percentiles (approximated)\n") {
		t.Errorf("incomplete exact data still printed as exact")
	}
}

func TestMasterErrorsAndExceptions(t *testing.T) {
	s := New(nil)
	e := func(key, text string, first float64) protocol.StatsError {
		return protocol.StatsError{Name: "/", Method: "GET", Error: text, Occurrences: 2, FirstSeen: &first, LastSeen: ptr(first + 1)}
	}
	s.Merge(&protocol.StatsReport{Errors: map[string]protocol.StatsError{
		"k3": e("k3", "third", 30), "k1": e("k1", "first", 10), "k2": e("k2", "second", 20),
	}})
	s.Merge(&protocol.StatsReport{Errors: map[string]protocol.StatsError{"k1": e("k1", "first", 5), "k0": e("k0", "zero", 1)}})
	snap := s.Snapshot()
	var order []string
	for _, er := range snap.Errors {
		order = append(order, er.Error)
	}
	if got := strings.Join(order, ","); got != "first,second,third,zero" {
		t.Errorf("error order = %s", got)
	}
	if first := snap.Errors[0]; first.Occurrences != 4 || *first.FirstSeen != 5 || *first.LastSeen != 11 {
		t.Errorf("merged error = %+v", first)
	}
	s.AddException("m1", "tb1", "w1")
	s.AddException("m2", "tb1", "w2")
	s.AddException("m3", "tb2", "w1")
	s.AddException("m1", "tb1", "w1")
	var csv bytes.Buffer
	must(t, WriteExceptionsCSV(&csv, s.Snapshot()))
	if want := "Count,Message,Traceback,Nodes\r\n3,m1,tb1,\"w1, w2\"\r\n1,m3,tb2,w1\r\n"; csv.String() != want {
		t.Errorf("exceptions CSV = %q; want %q", csv.String(), want)
	}
	s.Reset()
	if snap := s.Snapshot(); len(snap.Errors) != 0 || len(snap.Exceptions) != 2 {
		t.Errorf("Reset: %d errors, %d exceptions; want 0, 2", len(snap.Errors), len(snap.Exceptions))
	}
	s.ClearExceptions()
	if snap := s.Snapshot(); len(snap.Exceptions) != 0 {
		t.Errorf("ClearExceptions left %d", len(snap.Exceptions))
	}
	s.AddException("m", "tb", "w")
	s.Clear()
	if snap := s.Snapshot(); len(snap.Exceptions) != 0 || snap.Total.MethodNil {
		t.Errorf("Clear: %d exceptions, method nil %v", len(snap.Exceptions), snap.Total.MethodNil)
	}
}
