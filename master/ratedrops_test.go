package master

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// dropsSnapshot is a master's statistics after two cicada workers'
// reports: requests on /a and "/b,c", drops by name, one name
// ("TASK checkout") with drops and no request.
func dropsSnapshot(t *testing.T) *stats.Snapshot {
	t.Helper()
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	s := stats.New(now)
	for i, w := range []struct {
		reqs map[string]int
		drop map[[2]string]int64
	}{
		{map[string]int{"/a": 3, "/b,c": 1}, map[[2]string]int64{{"GET", "/a"}: 4, {"TASK", "checkout"}: 2}},
		{map[string]int{"/a": 1}, map[[2]string]int64{{"GET", "/a"}: 6, {"GET", "/b,c"}: 1}},
	} {
		rec := stats.NewRecorder(now)
		for name, n := range w.reqs {
			for range n {
				rec.RecordCorrected("GET", name, 10*time.Millisecond, time.Duration(10+i)*time.Millisecond, 5, "")
			}
		}
		for k, n := range w.drop {
			rec.AddDroppedFor(k[0], k[1], n)
		}
		s.Merge(rec.Report(map[string]int64{"U": 1}, 1))
	}
	return s.Snapshot()
}

func TestDroppedLine(t *testing.T) {
	snap := dropsSnapshot(t)
	rf := &rateFrame{}
	for _, tc := range []struct {
		name string
		snap *stats.Snapshot
		rf   *rateFrame
		want string
	}{
		{"drops", snap, rf, "Dropped iterations (arrival rate): 13; GET /a 10, TASK checkout 2, GET /b,c 1\n\n"},
		{"closed model", snap, nil, ""},
		{"nothing dropped", stats.New(nil).Snapshot(), rf, ""},
	} {
		var b strings.Builder
		writeDroppedLine(&b, tc.snap, tc.rf)
		if b.String() != tc.want {
			t.Errorf("%s: %q; want %q", tc.name, b.String(), tc.want)
		}
	}
	// More names than the line shows.
	s := stats.New(nil)
	rec := stats.NewRecorder(nil)
	for i, n := range []string{"/1", "/2", "/3", "/4", "/5", "/6", "/7"} {
		rec.AddDroppedFor("GET", n, int64(10-i))
	}
	s.Merge(rec.Report(nil, 1))
	var b strings.Builder
	writeDroppedLine(&b, s.Snapshot(), rf)
	if want := "Dropped iterations (arrival rate): 49; GET /1 10, GET /2 9, GET /3 8, GET /4 7, GET /5 6 and 2 more names\n\n"; b.String() != want {
		t.Errorf("%q; want %q", b.String(), want)
	}
}

func TestDroppedSummaryTable(t *testing.T) {
	snap := dropsSnapshot(t)
	var b strings.Builder
	writeRateTable(&b, snap, &rateFrame{requested: 10, workers: []rateWorker{{index: 0, id: "w1", dropped: 6}, {index: 1, id: "w2", dropped: 7}}})
	out := b.String()
	want := "\nDropped iterations by name (the first request of the task each would have run)\n" +
		"Type     Name                                                              Dropped    Share\n" +
		strings.Repeat("-", 91) + "\n" +
		"GET      /a                                                                     10    76.9%\n" +
		"TASK     checkout                                                                2    15.4%\n" +
		"GET      /b,c                                                                    1     7.7%\n"
	if !strings.Contains(out, want) {
		t.Errorf("summary lacks the per-name table:\n%s\nwant:\n%s", out, want)
	}
	// Closed model: no table.
	b.Reset()
	writeRateTable(&b, stats.New(nil).Snapshot(), &rateFrame{})
	if strings.Contains(b.String(), "by name") {
		t.Errorf("a table without drops:\n%s", b.String())
	}
}

// TestRateCSVDroppedByName checks PREFIX_rate.csv byte for byte: the
// dropped iterations on each row, a row for the name without requests
// (before Aggregated, which CSV readers find by its empty Type), names
// quoted as Python's csv module does.
func TestRateCSVDroppedByName(t *testing.T) {
	snap := dropsSnapshot(t)
	prefix := filepath.Join(t.TempDir(), "run")
	c, err := openRateCSV(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.write(snap, &rateFrame{requested: 10}); err != nil {
		t.Fatal(err)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(prefix + "_rate.csv")
	if err != nil {
		t.Fatal(err)
	}
	// Byte checks of the lines without measured times; the others by field.
	lines := strings.Split(string(got), "\r\n")
	if len(lines) != 6 || lines[5] != "" {
		t.Fatalf("%d lines:\n%s", len(lines), got)
	}
	if want := "Type,Name,Requested Rate,Achieved Request Rate,Request Count,Dropped Iterations,Corrected 50%,Corrected 90%,Corrected 99%,Corrected 99.9%,Corrected 100%"; lines[0] != want {
		t.Errorf("header %q", lines[0])
	}
	if want := "TASK,checkout,,0.000,0,2,N/A,N/A,N/A,N/A,N/A"; lines[3] != want {
		t.Errorf("the row of a name without requests: %q; want %q", lines[3], want)
	}
	rows, err := csv.NewReader(strings.NewReader(string(got))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range [][]string{
		{"GET", "/a", "", "4", "10"},
		{"GET", "/b,c", "", "1", "1"},
		{"TASK", "checkout", "", "0", "2"},
		{"", "Aggregated", "10.000", "5", "13"},
	} {
		r := rows[i+1]
		if got := []string{r[0], r[1], r[2], r[4], r[5]}; !slices.Equal(got, w) {
			t.Errorf("row %d: type, name, requested, requests, dropped = %q; want %q", i+1, got, w)
		}
	}
	var perName int64
	for _, d := range snap.DroppedBy {
		perName += d.Count
	}
	if perName != snap.Total.Dropped {
		t.Errorf("names sum to %d, total %d", perName, snap.Total.Dropped)
	}
}

// The rate CSV of a closed-model run does not exist; one of a rate run
// without drops has zeros.
func TestRateCSVNoDrops(t *testing.T) {
	s := stats.New(nil)
	rec := stats.NewRecorder(nil)
	rec.Record("GET", "/a", time.Millisecond, 1, "")
	s.Merge(rec.Report(nil, 1))
	prefix := filepath.Join(t.TempDir(), "run")
	c, err := openRateCSV(prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if err := c.write(s.Snapshot(), &rateFrame{}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(prefix + "_rate.csv")
	lines := strings.Split(string(got), "\r\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "GET,/a,,") || strings.Split(lines[1], ",")[5] != "0" {
		t.Errorf("rate CSV without drops:\n%s", got)
	}
}

// TestDroppedLinePeriodic: a headless rate test whose cicada worker
// reports drops by name prints the drop line right under the periodic
// table and writes the per-name rows of PREFIX_rate.csv.
func TestDroppedLinePeriodic(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.RunTime = time.Minute
	o.UserClasses = []UserClass{{Name: "U", Weight: 1}}
	o.Rate = []RateStage{{Rate: 100}}
	o.StatsInterval = 20 * time.Millisecond
	o.CSVPrefix = filepath.Join(t.TempDir(), "run")
	o.CSVInterval = 20 * time.Millisecond
	var stderr syncBuf
	o.Stderr = &stderr
	h := startMaster(t, o, logs)
	w := h.worker("a")
	w.ready(skipCheck)
	var state atomic.Value
	state.Store(protocol.StateReady)
	defer w.beatEvery(20*time.Millisecond, func() string { return state.Load().(string) })()
	w.expect(protocol.TypeSpawn)
	w.send(protocol.TypeSpawning, nil)
	state.Store(protocol.StateRunning)
	rec := stats.NewRecorder(nil)
	rec.Record("GET", "/", 5*time.Millisecond, 10, "")
	rec.AddDroppedFor("GET", "/", 7)
	rec.AddDroppedFor("TASK", "think", 2)
	w.send(protocol.TypeStats, rec.Report(map[string]int64{"U": 1}, 1))
	line := regexp.MustCompile(`(?m)^ +Aggregated .*\n\nDropped iterations \(arrival rate\): 9; GET / 7, TASK think 2\n\n`)
	eventually(t, waitShort, "the drop line under a periodic table", func() bool { return line.MatchString(stderr.String()) })
	eventually(t, waitShort, "the per-name rows of the rate CSV", func() bool {
		b, _ := os.ReadFile(o.CSVPrefix + "_rate.csv")
		return strings.Contains(string(b), "\r\nTASK,think,,0.000,0,2,") && strings.Contains(string(b), ",Aggregated,100.000,")
	})
	h.m.Quit()
	w.expect(protocol.TypeQuit)
	w.send(protocol.TypeQuit, nil)
	if _, err := h.wait(); err != nil {
		t.Fatal(err)
	}
}
