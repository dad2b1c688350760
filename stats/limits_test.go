package stats

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// logBuf is a concurrency-safe log sink for tests that counts lines.
type logBuf struct{ testpeer.SyncBuffer }

func (l *logBuf) count(sub string) int { return strings.Count(l.String(), sub) }

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// namesReport is a report of one request per name, each with one error
// text of its own when errs is set.
func namesReport(names []string, errs bool) *protocol.StatsReport {
	r := &protocol.StatsReport{Errors: map[string]protocol.StatsError{}}
	for _, n := range names {
		e := protocol.StatsEntry{Name: n, Method: ptr("GET"), StartTime: 1, NumRequests: 1,
			ResponseTimes: protocol.Counts(map[int64]int64{5: 1})}
		r.Stats = append(r.Stats, e)
		r.Total.NumRequests++
		if errs {
			r.Errors[ErrorKey("GET", n, "boom "+n)] = protocol.StatsError{Name: n, Method: "GET", Error: "boom " + n, Occurrences: 1}
		}
	}
	r.Total.Name = "Aggregated"
	r.Total.ResponseTimes = protocol.Counts(map[int64]int64{5: int64(len(names))})
	return r
}

func nameList(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func entryByName(s *Snapshot, method, name string) *EntryStats {
	for i := range s.Entries {
		if s.Entries[i].Name == name && s.Entries[i].Method == method {
			return &s.Entries[i]
		}
	}
	return nil
}

// TestMergeFoldsEntries: names beyond MaxEntries are counted in one row
// (OTHER, "(other names)"), with one warning per test; totals are exact.
func TestMergeFoldsEntries(t *testing.T) {
	var logs logBuf
	s, err := NewWithOptions(Options{MaxEntries: 3, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	s.Merge(namesReport(nameList("/a", 5), false))
	s.Merge(namesReport(nameList("/b", 2), false))
	s.Merge(namesReport(nameList("/a", 5), false))
	snap := s.Snapshot()
	if len(snap.Entries) != 4 {
		t.Fatalf("after 7 names with MaxEntries 3: %d entries; want 4", len(snap.Entries))
	}
	other := entryByName(snap, OtherMethod, OtherName)
	if other == nil || other.NumRequests != 2+2+2 || other.Percentile(0.5) != 5 {
		t.Fatalf("folded entry = %+v; want 6 requests at 5 ms", other)
	}
	if snap.Total.NumRequests != 12 {
		t.Errorf("Total.NumRequests = %d; want 12", snap.Total.NumRequests)
	}
	if got := logs.count("distinct request names"); got != 1 {
		t.Errorf("%d warnings; want 1", got)
	}
	s.Reset() // entries kept: no new warning
	s.Merge(namesReport(nameList("/c", 1), false))
	s.Clear()
	s.Merge(namesReport(nameList("/d", 4), false))
	if got := logs.count("distinct request names"); got != 2 {
		t.Errorf("after Clear: %d warnings; want 2", got)
	}
}

// TestMergeDefaultMaxEntries: with the defaults, one report of
// DefaultMaxEntries+5 names makes DefaultMaxEntries entries plus the folded
// one (before, every name got an entry of several KB).
func TestMergeDefaultMaxEntries(t *testing.T) {
	s := New(nil)
	s.Merge(namesReport(nameList("/n", DefaultMaxEntries+5), false))
	snap := s.Snapshot()
	if got, want := len(snap.Entries), DefaultMaxEntries+1; got != want {
		t.Fatalf("entries = %d; want %d", got, want)
	}
	if e := entryByName(snap, OtherMethod, OtherName); e == nil || e.NumRequests != 5 {
		t.Errorf("folded entry = %+v; want 5 requests", e)
	}
}

// TestMergeFoldsErrors: error rows beyond MaxErrors are counted in one row
// (OTHER "(other names)": "(other errors)"), with one warning.
func TestMergeFoldsErrors(t *testing.T) {
	var logs logBuf
	s, err := NewWithOptions(Options{MaxErrors: 2, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	s.Merge(namesReport(nameList("/a", 2), true))
	s.Merge(namesReport(nameList("/b", 3), true))
	s.Merge(namesReport(nameList("/a", 2), true))
	s.Merge(namesReport(nameList("/c", 10), true)) // one report, more than the room
	snap := s.Snapshot()
	if len(snap.Errors) != 3 {
		t.Fatalf("errors = %d rows; want 3: %+v", len(snap.Errors), snap.Errors)
	}
	for i, want := range []int64{2, 2} {
		if e := snap.Errors[i]; e.Occurrences != want || !strings.HasPrefix(e.Name, "/a") {
			t.Errorf("row %d = %+v; want /a... with %d", i, e, want)
		}
	}
	o := snap.Errors[2]
	if o.Method != OtherMethod || o.Name != OtherName || o.Error != OtherError || o.Occurrences != 13 || o.Key != otherErrorKey {
		t.Errorf("folded row = %+v; want %s %s %s with 13", o, OtherMethod, OtherName, OtherError)
	}
	if got := logs.count("distinct errors"); got != 1 {
		t.Errorf("%d warnings; want 1", got)
	}
}

// TestAddExceptionFolds: tracebacks beyond MaxExceptions are counted in one
// row.
func TestAddExceptionFolds(t *testing.T) {
	var logs logBuf
	s, err := NewWithOptions(Options{MaxExceptions: 2, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		s.AddException("m", fmt.Sprintf("tb %d", i), "w1")
	}
	s.AddException("m", "tb 0", "w2")
	s.AddException("m", "tb 9", "w2")
	snap := s.Snapshot()
	if len(snap.Exceptions) != 3 {
		t.Fatalf("exceptions = %d rows; want 3", len(snap.Exceptions))
	}
	if x := snap.Exceptions[0]; x.Count != 2 || len(x.Nodes) != 2 {
		t.Errorf("row 0 = %+v; want count 2 on 2 nodes", x)
	}
	if x := snap.Exceptions[2]; x.Traceback != OtherException || x.Msg != OtherException || x.Count != 4 {
		t.Errorf("folded row = %+v; want %s with 4", x, OtherException)
	}
	if got := logs.count("distinct exceptions"); got != 1 {
		t.Errorf("%d warnings; want 1", got)
	}
}

// TestRecorderFoldsEntries: a worker's names beyond MaxEntries go to the
// folded entry, which a master with the same limit merges into its own.
func TestRecorderFoldsEntries(t *testing.T) {
	var logs logBuf
	clk := newFakeClock(1_700_000_000)
	r, err := NewRecorderWithOptions(Options{Now: clk.now, MaxEntries: 2, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r.Record("GET", fmt.Sprintf("/p%d", i), time.Duration(i+1)*time.Millisecond, 1, "")
	}
	rep := r.Report(nil, 1)
	if len(rep.Stats) != 3 {
		t.Fatalf("report has %d entries; want 3", len(rep.Stats))
	}
	o := rep.Stats[2]
	if o.Name != OtherName || *o.Method != OtherMethod || o.NumRequests != 3 || rep.Total.NumRequests != 5 {
		t.Errorf("folded entry %s %s with %d (total %d); want %s %s with 3 (total 5)",
			*o.Method, o.Name, o.NumRequests, rep.Total.NumRequests, OtherMethod, OtherName)
	}
	if got := logs.count("distinct request names"); got != 1 {
		t.Errorf("%d warnings; want 1", got)
	}
	s, _ := NewWithOptions(Options{Now: clk.now, MaxEntries: 2})
	payload, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: rep, NodeID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := protocol.DecodePooled(payload)
	if err != nil {
		t.Fatal(err)
	}
	s.Merge(m.Data.(*protocol.StatsReport))
	m.Data.(*protocol.StatsReport).Release()
	if e := entryByName(s.Snapshot(), OtherMethod, OtherName); e == nil || e.NumRequests != 3 {
		t.Errorf("master's folded entry = %+v; want 3 requests", e)
	}
}

// TestRecorderFoldsErrors: error texts beyond MaxErrors in a window are
// counted as OtherError in their entry; texts that stop recurring make room
// again.
func TestRecorderFoldsErrors(t *testing.T) {
	var logs logBuf
	r, err := NewRecorderWithOptions(Options{MaxErrors: 2, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r.Record("GET", "/x", time.Millisecond, 1, fmt.Sprintf("E%d", i))
	}
	rep := r.Report(nil, 1)
	got := map[string]int64{}
	for _, e := range rep.Errors {
		got[e.Error] = e.Occurrences
	}
	if want := map[string]int64{"E0": 1, "E1": 1, OtherError: 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("errors = %v; want %v", got, want)
	}
	if n := logs.count("distinct errors"); n != 1 {
		t.Errorf("%d warnings; want 1", n)
	}
	r.Report(nil, 1) // E0 and E1 did not recur: dropped
	r.Record("GET", "/x", time.Millisecond, 1, "E7")
	rep = r.Report(nil, 1)
	for _, e := range rep.Errors {
		if e.Error != "E7" {
			t.Errorf("third window: error %q; want only E7", e.Error)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		rec  bool
	}{
		{"negative MaxEntries", Options{MaxEntries: -1}, false},
		{"negative MaxErrors", Options{MaxErrors: -5}, true},
		{"negative MaxExceptions", Options{MaxExceptions: -1}, false},
		{"negative MaxBuckets", Options{MaxBuckets: -1}, false},
		{"negative MaxText", Options{MaxText: -1}, false},
		{"Recorder MaxEntries at the report limit", Options{MaxEntries: protocol.MaxReportEntries}, true},
		{"Recorder errors past the report limit", Options{MaxErrors: protocol.MaxReportErrors - DefaultMaxEntries}, true},
	} {
		var err error
		if c.rec {
			_, err = NewRecorderWithOptions(c.opts)
		} else {
			_, err = NewWithOptions(c.opts)
		}
		if !errors.Is(err, ErrBadOption) {
			t.Errorf("%s: error = %v; want ErrBadOption", c.name, err)
		}
	}
	if _, err := NewRecorderWithOptions(Options{MaxEntries: protocol.MaxReportEntries - 2, MaxErrors: 1}); err != nil {
		t.Errorf("Recorder at the largest limits: %v", err)
	}
}

// TestConsoleTablesBounded: the stats and percentile tables print at most
// MaxRows entry rows and the error report at most MaxRows errors, then a
// line counting the rest; the Total row always comes last; a negative
// MaxRows prints everything. The CSV keeps every row.
func TestConsoleTablesBounded(t *testing.T) {
	s := New(nil)
	s.Merge(namesReport(nameList("/n", 2500), true))
	snap := s.Snapshot()
	rows := func(out, prefix string) int {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name    string
		f       Format
		want    int
		omitted string
	}{
		{"default", Format{}, DefaultMaxRows, "... 1500 more entries not shown"},
		{"MaxRows 2", Format{MaxRows: 2}, 2, "... 2498 more entries not shown"},
		{"no limit", Format{MaxRows: -1}, 2500, ""},
	} {
		var tab, pct, errs bytes.Buffer
		if err := c.f.WriteStatsTable(&tab, snap, true); err != nil {
			t.Fatal(err)
		}
		if err := c.f.WritePercentileTable(&pct, snap); err != nil {
			t.Fatal(err)
		}
		if err := c.f.WriteErrorReport(&errs, snap); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"stats table": tab.String(), "percentile table": pct.String()} {
			if got := rows(out, "GET "); got != c.want {
				t.Errorf("%s: %s prints %d rows; want %d", c.name, name, got, c.want)
			}
			if c.omitted != "" && !strings.Contains(out, c.omitted) || c.omitted == "" && strings.Contains(out, "not shown") {
				t.Errorf("%s: %s omitted line wrong; want %q", c.name, name, c.omitted)
			}
			if !strings.Contains(out, "Aggregated") {
				t.Errorf("%s: %s lacks the Aggregated row", c.name, name)
			}
		}
		if got := rows(errs.String(), "1 "); got != c.want {
			t.Errorf("%s: error report prints %d rows; want %d", c.name, got, c.want)
		}
		if want := strings.Replace(c.omitted, "entries", "errors", 1); c.omitted != "" && !strings.Contains(errs.String(), want) {
			t.Errorf("%s: error report lacks %q", c.name, want)
		}
	}
	var csv bytes.Buffer
	if err := WriteStatsCSV(&csv, snap); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(csv.String(), "\n"); got != 2500+2 {
		t.Errorf("stats CSV has %d lines; want %d", got, 2500+2)
	}
}

// TestRecorderMaskedErrorsAddUp: failure texts that differ only in an
// object address are one error row whose occurrences add up (the second
// text overwrote the first's count before).
func TestRecorderMaskedErrorsAddUp(t *testing.T) {
	clk := newFakeClock(1_700_000_000)
	r := NewRecorder(clk.now)
	r.Record("GET", "/x", time.Millisecond, 1, "E(<Foo object at 0x7f01>)")
	clk.add(time.Second)
	for range 3 {
		r.Record("GET", "/x", time.Millisecond, 1, "E(<Foo object at 0x7f02>)")
	}
	rep := r.Report(nil, 1)
	if len(rep.Errors) != 1 {
		t.Fatalf("errors = %v; want one row", rep.Errors)
	}
	for _, e := range rep.Errors {
		if e.Occurrences != 4 || e.Error != "E(<Foo object at 0x....>)" || *e.FirstSeen != 1_700_000_000 || *e.LastSeen != 1_700_000_001 {
			t.Errorf("row = %q x%d, seen %v..%v; want the masked text x4, seen 1700000000..1700000001",
				e.Error, e.Occurrences, *e.FirstSeen, *e.LastSeen)
		}
	}
}

// TestMergeBucketKeysBounded: response-time keys off Locust's dense grid
// are kept as sent up to MaxBuckets over all entries; beyond, they count
// under powers of two, so a hostile stream of distinct keys cannot grow
// the master without bound. Counts are never lost.
func TestMergeBucketKeysBounded(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    Options
		keys    int
		maxKeys int // per entry: budget + 63 powers of two + the dense grid
	}{
		{"MaxBuckets 10", Options{MaxBuckets: 10}, 1000, 10 + 63 + 1},
		{"default", Options{}, 3 * DefaultMaxBuckets / 2, DefaultMaxBuckets + 63 + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewWithOptions(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			rt := map[int64]int64{5: 1}
			for i := range c.keys {
				rt[100_001+int64(i)] = 2
			}
			e := protocol.StatsEntry{Name: "/x", Method: ptr("GET"), StartTime: 1, NumRequests: int64(1 + 2*c.keys),
				ResponseTimes: protocol.Counts(rt)} // ascending, as Decode gives them
			s.Merge(&protocol.StatsReport{Stats: []protocol.StatsEntry{e}})
			s.Merge(&protocol.StatsReport{Stats: []protocol.StatsEntry{e}})
			got := s.Snapshot().Entries[0].ResponseTimes()
			var sum int64
			for _, n := range got {
				sum += n
			}
			if len(got) > c.maxKeys || sum != 2*int64(1+2*c.keys) {
				t.Errorf("%d keys, %d samples; want at most %d keys and %d samples", len(got), sum, c.maxKeys, 2*(1+2*c.keys))
			}
			if got[5] != 2 || got[100_001] != 4 {
				t.Errorf("buckets 5 and 100001 = %d, %d; want 2, 4 (kept as sent)", got[5], got[100_001])
			}
		})
	}
}

// TestStatsClipsLongTexts: names, error texts and keys, tracebacks and
// nodes longer than MaxText are stored cut, ending with TruncatedMark (at a
// rune boundary); names cut to one prefix share an entry.
func TestStatsClipsLongTexts(t *testing.T) {
	s, err := NewWithOptions(Options{MaxText: 10})
	if err != nil {
		t.Fatal(err)
	}
	long := func(tail string) string { return "/123456789é" + strings.Repeat("x", 1<<20) + tail }
	r := namesReport([]string{long("a"), long("b"), "/short"}, false)
	r.Errors[long("key")] = protocol.StatsError{Name: long("n"), Method: "GET", Error: long("e"), Occurrences: 2}
	s.Merge(r)
	s.AddException(long("m"), long("tb"), long("node"))
	snap := s.Snapshot()
	want := "/123456789" + TruncatedMark // "é" would pass 10 bytes: cut before it
	if len(snap.Entries) != 2 || entryByName(snap, "GET", want) == nil || entryByName(snap, "GET", want).NumRequests != 2 {
		t.Fatalf("entries = %d, %+v; want /short and %q with 2 requests", len(snap.Entries), entryByName(snap, "GET", want), want)
	}
	e := snap.Errors[0]
	x := snap.Exceptions[0]
	for name, got := range map[string]string{"error key": e.Key, "error name": e.Name, "error text": e.Error,
		"exception msg": x.Msg, "traceback": x.Traceback, "node": x.Nodes[0]} {
		if got != want {
			t.Errorf("%s = %.40q (%d bytes); want %q", name, got, len(got), want)
		}
	}
}
