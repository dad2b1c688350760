package stats

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

var update = flag.Bool("update", false, "regenerate testdata/scenarios and the golden files by running Locust's stats code (/usr/bin/python3)")

const pythonPath = testpeer.PythonBin

// event is one step of a scenario, replayed identically by
// testdata/locust_golden.py (through Locust's stats code) and by replay.
type event struct {
	Op         string           `json:"op"`
	T          int64            `json:"t"` // unix ns
	W          string           `json:"w,omitempty"`
	M          string           `json:"m,omitempty"`
	N          string           `json:"n,omitempty"`
	RT         *int64           `json:"rt,omitempty"` // ns; absent: None
	Len        int64            `json:"len,omitempty"`
	Err        *string          `json:"err,omitempty"`
	Users      map[string]int64 `json:"users,omitempty"`
	UserCount  int64            `json:"user_count,omitempty"`
	Node       string           `json:"node,omitempty"`
	Msg        string           `json:"msg,omitempty"`
	TB         string           `json:"tb,omitempty"`
	Label      string           `json:"label,omitempty"`
	Exceptions bool             `json:"exceptions,omitempty"`
}

type scenario struct {
	Start   int64    `json:"start"`
	Workers []string `json:"workers"`
	Widths  []int    `json:"widths"`
	Events  []event  `json:"events"`
}

// pythonLocust reports whether /usr/bin/python3 can import Locust's stats
// and msgpack. Under CI=true its absence fails the test.
func pythonLocust(t *testing.T) bool {
	t.Helper()
	err := testpeer.CheckPython("locust.stats", "msgpack")
	if err != nil && testpeer.CI() {
		t.Fatalf("required under CI=true: %v", err)
	}
	return err == nil
}

func runLocust(t *testing.T, scenarioPath, outDir string) {
	t.Helper()
	cmd := exec.Command(pythonPath, "testdata/locust_golden.py", scenarioPath, outDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("locust_golden.py %s: %v\n%s", scenarioPath, err, stderr.String())
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// compareFiles fails with the first differing line of every differing file.
func compareFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	names := map[string]bool{}
	for n := range got {
		names[n] = true
	}
	for n := range want {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		g, gok := got[n]
		w, wok := want[n]
		switch {
		case !gok:
			t.Errorf("%s: %s missing from Go output", what, n)
		case !wok:
			t.Errorf("%s: %s produced by Go but not by Locust", what, n)
		case g != w:
			gl, wl := strings.SplitAfter(g, "\n"), strings.SplitAfter(w, "\n")
			for i := 0; i < max(len(gl), len(wl)); i++ {
				var a, b string
				if i < len(gl) {
					a = gl[i]
				}
				if i < len(wl) {
					b = wl[i]
				}
				if a != b {
					t.Errorf("%s: %s line %d:\n got  %q\n want %q", what, n, i+1, a, b)
					break
				}
			}
		}
	}
}

// TestGolden replays every testdata/scenarios/*.json through Recorder,
// Merge and the writers, and compares the result with the committed output
// of Locust's own code in testdata/golden/<scenario>/; when Locust is
// installed it also reruns Locust into a temporary directory and compares
// with that, so that drift of either side is caught. -update regenerates
// the scenarios and the goldens.
func TestGolden(t *testing.T) {
	if *update {
		for name, sc := range buildScenarios() {
			b, err := marshalScenario(sc)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata/scenarios", name+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	paths, err := filepath.Glob("testdata/scenarios/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var sc scenario
			if err := json.Unmarshal(raw, &sc); err != nil {
				t.Fatal(err)
			}
			got := replay(t, &sc, false)
			golden := filepath.Join("testdata/golden", name)
			if *update {
				os.RemoveAll(golden)
				runLocust(t, path, golden)
			}
			compareFiles(t, "committed golden", got, readDir(t, golden))
			// As a master merges: reports through the wire and DecodePooled
			// (stats maps as pairs).
			compareFiles(t, "committed golden (pooled)", replay(t, &sc, true), readDir(t, golden))
			if !*update && pythonLocust(t) {
				tmp := t.TempDir()
				runLocust(t, path, tmp)
				compareFiles(t, "Locust now", got, readDir(t, tmp))
			}
		})
	}
}

// marshalScenario writes one event per line, for readable diffs.
func marshalScenario(sc *scenario) ([]byte, error) {
	head, err := json.Marshal(scenario{Start: sc.Start, Workers: sc.Workers, Widths: sc.Widths})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(bytes.TrimSuffix(head, []byte(`,"events":null}`)))
	b.WriteString(`,"events":[`)
	for i, ev := range sc.Events {
		e, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(e)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}

// replay runs a scenario through package stats and returns the files
// locust_golden.py writes for it. With pooled set, every report goes to the
// master as a cicada master receives it: encoded, then DecodePooled (the
// stats maps as pairs), merged and released.
func replay(t *testing.T, sc *scenario, pooled bool) map[string]string {
	t.Helper()
	clock := sc.Start
	now := func() time.Time { return time.Unix(0, clock) }
	master := New(now)
	workers := map[string]*Recorder{}
	for _, w := range sc.Workers {
		workers[w] = NewRecorder(now)
	}
	files := map[string]string{}
	var hist, histFull bytes.Buffer
	h, err := NewHistoryCSV(&hist, false)
	if err != nil {
		t.Fatal(err)
	}
	hf, err := NewHistoryCSV(&histFull, true)
	if err != nil {
		t.Fatal(err)
	}
	var reports strings.Builder
	for _, ev := range sc.Events {
		clock = ev.T
		switch ev.Op {
		case "req":
			r := workers[ev.W]
			var failure string
			if ev.Err != nil {
				failure = *ev.Err
			}
			if ev.RT == nil {
				r.RecordNone(ev.M, ev.N, ev.Len, failure)
			} else {
				r.Record(ev.M, ev.N, time.Duration(*ev.RT), ev.Len, failure)
			}
		case "report":
			users := ev.Users
			if users == nil {
				users = map[string]int64{}
			}
			var n int64
			for _, v := range users {
				n += v
			}
			rep := workers[ev.W].Report(users, n)
			reports.WriteString(reportJSON(t, ev.W, rep))
			if !pooled {
				master.Merge(rep)
				break
			}
			payload, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: rep, NodeID: ev.W})
			must(t, err)
			m, err := protocol.DecodePooled(payload)
			must(t, err)
			master.Merge(m.Data.(*protocol.StatsReport))
			m.Data.(*protocol.StatsReport).Release()
		case "exception":
			master.AddException(ev.Msg, ev.TB, ev.Node)
		case "master_clear":
			master.Clear()
		case "master_reset":
			master.Reset()
			if ev.Exceptions {
				master.ClearExceptions()
			}
		case "worker_clear":
			workers[ev.W].Clear()
		case "history":
			s := master.Snapshot()
			if err := h.WriteRows(s, ev.UserCount); err != nil {
				t.Fatal(err)
			}
			if err := hf.WriteRows(s, ev.UserCount); err != nil {
				t.Fatal(err)
			}
		case "output":
			s := master.Snapshot()
			var b bytes.Buffer
			must(t, WriteStatsCSV(&b, s))
			files[ev.Label+"_stats.csv"] = b.String()
			b.Reset()
			must(t, WriteFailuresCSV(&b, s))
			files[ev.Label+"_failures.csv"] = b.String()
			b.Reset()
			must(t, WriteExceptionsCSV(&b, s))
			files[ev.Label+"_exceptions.csv"] = b.String()
			files[ev.Label+"_numbers.txt"] = numbersText(s)
			widths := sc.Widths
			if len(widths) == 0 {
				widths = []int{80}
			}
			for _, w := range widths {
				f := Format{NameWidth: w}
				if w == 0 {
					f.NameWidth = -1
				}
				b.Reset()
				must(t, f.WriteStatsTable(&b, s, true))
				must(t, f.WriteStatsTable(&b, s, false))
				must(t, f.WritePercentileTable(&b, s))
				must(t, f.WriteErrorReport(&b, s))
				files[fmt.Sprintf("%s_console_w%d.txt", ev.Label, w)] = b.String()
			}
		default:
			t.Fatalf("unknown op %q", ev.Op)
		}
	}
	files["reports.jsonl"] = reports.String()
	files["stats_history.csv"] = hist.String()
	files["stats_history_full.csv"] = histFull.String()
	return files
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func pyOptFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return pyrepr.Float(*p)
}

func strKeys(m map[int64]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[strconv.FormatInt(k, 10)] = v
	}
	return out
}

func entryJSON(e *protocol.StatsEntry) map[string]any {
	var method any
	if e.Method != nil {
		method = *e.Method
	}
	return map[string]any{
		"name": e.Name, "method": method,
		"last_request_timestamp": pyOptFloat(e.LastRequestTimestamp),
		"start_time":             pyrepr.Float(e.StartTime),
		"num_requests":           e.NumRequests, "num_none_requests": e.NumNoneRequests, "num_failures": e.NumFailures,
		"total_response_time":  pyrepr.Float(e.TotalResponseTime),
		"max_response_time":    pyrepr.Float(e.MaxResponseTime),
		"min_response_time":    pyOptFloat(e.MinResponseTime),
		"total_content_length": e.TotalContentLength,
		"response_times":       strKeys(protocol.CountMap(e.ResponseTimes)),
		"num_reqs_per_sec":     strKeys(protocol.CountMap(e.NumReqsPerSec)),
		"num_fail_per_sec":     strKeys(protocol.CountMap(e.NumFailPerSec)),
	}
}

// reportJSON renders a report like locust_golden.py's norm_report.
func reportJSON(t *testing.T, worker string, r *protocol.StatsReport) string {
	stats := []any{}
	for i := range r.Stats {
		stats = append(stats, entryJSON(&r.Stats[i]))
	}
	errs := map[string]any{}
	for k, e := range r.Errors {
		errs[k] = map[string]any{"name": e.Name, "method": e.Method, "error": e.Error, "occurrences": e.Occurrences}
	}
	v := map[string]any{
		"worker": worker, "stats": stats, "stats_total": entryJSON(&r.Total), "errors": errs,
		"user_classes_count": r.UserClassesCount, "user_count": r.UserCount,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// numbersText renders locust_golden.py's numbers() for a snapshot.
func numbersText(s *Snapshot) string {
	var b strings.Builder
	for _, e := range append(slices.Clone(s.Entries), s.Total) {
		method := "None"
		if !e.MethodNil {
			method = pyrepr.String(e.Method)
		}
		minS := "None"
		if e.MinResponseTime != nil {
			minS = pyrepr.Float(*e.MinResponseTime)
		}
		maxS := "0"
		if e.MaxResponseTime != 0 {
			maxS = pyrepr.Float(e.MaxResponseTime)
		}
		acl := "0"
		if e.NumRequests != 0 {
			acl = pyrepr.Float(e.AvgContentLength())
		}
		var ps, cps []string
		for _, p := range PercentilesToReport {
			ps = append(ps, strconv.FormatInt(e.Percentile(p), 10))
			if v, ok := e.CurrentPercentile(p); ok {
				cps = append(cps, strconv.FormatInt(v, 10))
			} else {
				cps = append(cps, "None")
			}
		}
		fmt.Fprintf(&b, "%s %s median=%s avg=%s min=%s max=%s cur_rps=%s cur_fail=%s tot_rps=%s tot_fail=%s fail_ratio=%s acl=%s p=%s cp=%s\n",
			method, pyrepr.String(e.Name), e.MedianRepr(), pyrepr.Float(e.AvgResponseTime()), minS, maxS,
			pyrepr.Float(e.CurrentRPS), pyrepr.Float(e.CurrentFailPerSec), pyrepr.Float(e.TotalRPS),
			pyrepr.Float(e.TotalFailPerSec), pyrepr.Float(e.FailRatio()), acl,
			strings.Join(ps, ","), strings.Join(cps, ","))
	}
	return b.String()
}

// ---- scenarios ----

const longName = "/a/very/long/request/name/that/is/definitely/longer/than/the/name/column/width/of/seventy/six/characters"

func ms(v float64) *int64 {
	// Response times are multiples of 1/64 ms (15625 ns), so that float sums
	// are exact in any order and Locust's one-by-one float addition equals
	// the Recorder's exact nanosecond sum.
	n := int64(math.Round(v*64)) * 15625
	return &n
}

func str(s string) *string { return &s }

type builder struct {
	sc   scenario
	last int64
}

// at appends an event at start + sec seconds, or 1 µs after the previous
// event if that is later: every event has its own instant.
func (b *builder) at(sec float64, ev event) {
	ev.T = b.sc.Start + int64(math.Round(sec*1e9))
	if ev.T <= b.last { // periodic events falling on the same instant
		ev.T = b.last + 1000
	}
	b.last = ev.T
	b.sc.Events = append(b.sc.Events, ev)
}

func buildScenarios() map[string]*scenario {
	return map[string]*scenario{"edge": edgeScenario(), "bulk": bulkScenario()}
}

// edgeScenario exercises the rules one by one: half-even rounding in every
// bucket range, None times, failures of every error shape, wide and
// non-ASCII names, idle reports, reset and clear, the current windows
// before, during and after traffic.
func edgeScenario() *scenario {
	b := &builder{sc: scenario{Start: 1_796_011_000_250_000_000, Workers: []string{"w1", "w2"}, Widths: []int{80, 40, 0}}}
	b.at(0.1, event{Op: "output", Label: "00_empty"})
	b.at(0.2, event{Op: "history"})
	b.at(0.3, event{Op: "report", W: "w1"}) // nil total method before the first test
	b.at(0.5, event{Op: "master_clear"})
	b.at(0.6, event{Op: "worker_clear", W: "w1"})
	b.at(0.7, event{Op: "worker_clear", W: "w2"})
	catch := "CatchResponseError('Got 200 but I wanted something else')"
	e404 := "HTTPError('404 Client Error: File not found for url: /missing')"
	e501 := `HTTPError("501 Server Error: Unsupported method ('POST') for url: http://127.0.0.1:26080/index.html")`
	addr := "ConnectionError(<urllib3.connection.HTTPConnection object at 0x7f3a2b1c9d50>: Failed to establish a new connection)"
	both := `Exception('it\'s "both"')`
	multi := "RuntimeError('line one,\nline two\ttabbed')"
	type req struct {
		w, m, n string
		rt      *int64
		len     int64
		err     *string
	}
	reqs := []req{
		{"w1", "GET", "/", ms(100.0), 12, nil},
		{"w1", "GET", "/", ms(145), 12, nil},
		{"w2", "GET", "/", ms(155), 12, nil},
		{"w1", "GET", "/", ms(2.5), 12, nil},
		{"w2", "GET", "/", ms(3.5), 12, str(catch)},
		{"w1", "GET", "/", ms(0.5), 12, nil},
		{"w2", "GET", "/", ms(1.5), 12, nil},
		{"w1", "GET", "/data.json", ms(3.25), 8, nil},
		{"w2", "GET", "/data.json", ms(1050), 8, nil},
		{"w1", "GET", "/data.json", ms(9950), 8, nil},
		{"w2", "GET", "/slow", ms(12500), 0, nil},
		{"w1", "GET", "/slow", ms(13500), 0, nil},
		{"w2", "GET", "/async", nil, 5, nil},
		{"w1", "GET", "/async", nil, 5, str(e404)},
		{"w1", "GET", "/missing", ms(4.75), 335, str(e404)},
		{"w2", "POST", "/index.html", ms(2.015625), 357, str(e501)},
		{"w1", "GET", longName, ms(3.5), 8, nil},
		{"w2", "GET", "/ünïcödé/路径", ms(7.5), 3, nil},
		{"w1", "WS", "recv", ms(0.25), 1000, str(addr)},
		{"w2", "WS", "recv", ms(0.015625), 1000, str(both)},
		{"w1", "GET", "/", ms(999.5), 12, str(multi)},
		{"w1", "GET", "/", ms(99.5), 12, nil},
		{"w1", "GET", "/", ms(0.25), 12, nil},
	}
	// Traffic from 1 s to 16 s, cycling through the samples.
	sec := 1.01
	var i int
	nextReport := map[string]float64{"w1": 3.0, "w2": 4.5}
	nextHist := 1.0
	nextOut := []struct {
		at    float64
		label string
	}{{5.3, "01_warmup"}, {11.7, "02_running"}}
	users := map[string]map[string]int64{"w1": {"WebUser": 2, "ApiUser": 1}, "w2": {"WebUser": 1, "ApiUser": 2}}
	for sec < 16 {
		r := reqs[i%len(reqs)]
		i++
		for _, w := range []string{"w1", "w2"} {
			if sec > nextReport[w] {
				b.at(nextReport[w], event{Op: "report", W: w, Users: users[w]})
				nextReport[w] += 3
			}
		}
		if sec > nextHist {
			b.at(nextHist, event{Op: "history", UserCount: 6})
			nextHist++
		}
		if len(nextOut) > 0 && sec > nextOut[0].at {
			b.at(nextOut[0].at, event{Op: "output", Label: nextOut[0].label})
			nextOut = nextOut[1:]
		}
		b.at(sec, event{Op: "req", W: r.w, M: r.m, N: r.n, RT: r.rt, Len: r.len, Err: r.err})
		if i == 7 {
			tb := "  File \"/path/to/locustfile.py\", line 27, in boom\n    raise ValueError(\"deliberate, task exception\")\n"
			b.at(sec+0.001, event{Op: "exception", Node: "w1", Msg: "deliberate, task exception", TB: tb})
			b.at(sec+0.002, event{Op: "exception", Node: "w1", Msg: "other message", TB: tb})
			b.at(sec+0.003, event{Op: "exception", Node: "w2", Msg: "second", TB: "  File \"x.py\", line 1, in f\n"})
		}
		sec += 0.137
	}
	// Traffic stopped: the rates freeze, current percentiles go to 0 then None.
	for t := 16.0; t < 40; t += 1 {
		for _, w := range []string{"w1", "w2"} {
			if t >= nextReport[w] {
				b.at(nextReport[w], event{Op: "report", W: w, Users: users[w]})
				nextReport[w] += 3
			}
		}
		b.at(t+0.05, event{Op: "history", UserCount: 6})
		switch t {
		case 17:
			b.at(t+0.4, event{Op: "output", Label: "03_stopped"})
		case 29:
			b.at(t+0.4, event{Op: "output", Label: "04_stale"})
		case 36:
			b.at(t+0.4, event{Op: "output", Label: "05_frozen"})
		}
	}
	// Reset (zeroed rows stay), a little more traffic, then clear.
	b.at(40.2, event{Op: "master_reset"})
	b.at(40.3, event{Op: "output", Label: "06_reset"})
	b.at(41.0, event{Op: "req", W: "w1", M: "GET", N: "/data.json", RT: ms(5.5), Len: 8})
	b.at(41.5, event{Op: "req", W: "w2", M: "GET", N: "/new", RT: ms(250), Len: 1, Err: str(e404)})
	b.at(42.0, event{Op: "report", W: "w1", Users: users["w1"]})
	b.at(42.5, event{Op: "report", W: "w2", Users: users["w2"]})
	b.at(42.6, event{Op: "history", UserCount: 6})
	b.at(42.7, event{Op: "output", Label: "07_after_reset"})
	b.at(43.0, event{Op: "master_reset", Exceptions: true})
	b.at(43.1, event{Op: "output", Label: "08_reset_exceptions"})
	b.at(44.0, event{Op: "master_clear"})
	b.at(44.1, event{Op: "history"})
	b.at(44.2, event{Op: "output", Label: "09_cleared"})
	return &b.sc
}

// bulkScenario is three workers, 12 names and a few thousand requests
// with a long-tailed response-time distribution over 40 s.
func bulkScenario() *scenario {
	rng := rand.New(rand.NewPCG(3, 1415926))
	b := &builder{sc: scenario{Start: 1_796_020_000_000_000_000, Workers: []string{"a", "b", "c"}, Widths: []int{80}}}
	b.at(0.01, event{Op: "master_clear"})
	for i, w := range b.sc.Workers {
		b.at(0.02+float64(i)*0.01, event{Op: "worker_clear", W: w})
	}
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("/api/v%d/item-%02d", i%3, i))
	}
	errs := []string{
		"HTTPError('500 Server Error: INTERNAL SERVER ERROR for url: /api')",
		"CatchResponseError('bad body')",
		"ConnectionResetError(104, 'Connection reset by peer')",
		"ReadTimeout(\"HTTPConnectionPool(host='127.0.0.1', port=8080): Read timed out. (read timeout=2)\")",
	}
	next := map[string]float64{"a": 3, "b": 4, "c": 5}
	nextHist, nextOut := 1.0, 9.0
	sec := 0.5
	for sec < 40 {
		w := b.sc.Workers[rng.IntN(3)]
		for _, wk := range b.sc.Workers {
			if sec > next[wk] {
				b.at(next[wk], event{Op: "report", W: wk, Users: map[string]int64{"U": 4}})
				next[wk] += 3
			}
		}
		if sec > nextHist {
			b.at(nextHist, event{Op: "history", UserCount: 12})
			nextHist++
		}
		if sec > nextOut {
			b.at(nextOut, event{Op: "output", Label: fmt.Sprintf("t%02d", int(nextOut))})
			nextOut += 9
		}
		n := names[min(rng.IntN(len(names)), rng.IntN(len(names)))]
		m := "GET"
		if rng.IntN(5) == 0 {
			m = "POST"
		}
		var rt *int64
		switch x := rng.Float64(); {
		case x < 0.01:
		case x < 0.03:
			rt = ms(float64(rng.IntN(40))*10 + 5) // ties at 5, 15, ... 395
		case x < 0.035:
			rt = ms(1000 + rng.Float64()*20000)
		default:
			rt = ms(math.Exp(rng.NormFloat64()*0.9 + 2.5))
		}
		var err *string
		if rng.IntN(30) == 0 {
			err = str(errs[rng.IntN(len(errs))])
		}
		b.at(sec, event{Op: "req", W: w, M: m, N: n, RT: rt, Len: int64(rng.IntN(2000)), Err: err})
		sec += 0.004 + rng.Float64()*0.02
	}
	for t := 40.0; t < 65; t++ {
		for _, wk := range b.sc.Workers {
			if t >= next[wk] {
				b.at(next[wk], event{Op: "report", W: wk, Users: map[string]int64{"U": 0}})
				next[wk] += 3
			}
		}
		b.at(t+0.5, event{Op: "history"})
	}
	b.at(65.5, event{Op: "output", Label: "t65_final"})
	return &b.sc
}
