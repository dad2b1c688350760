package stats

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

func jsonRun(t *testing.T) *Stats {
	t.Helper()
	now := time.Unix(1_700_000_000, 250_000_000)
	clock := func() time.Time { return now }
	rec := NewRecorder(clock)
	st := New(clock)
	for i := 0; i < 3; i++ {
		rec.Record("GET", "/", 12*time.Millisecond+345*time.Microsecond, 100, "")
		rec.Record("GET", "/", 150*time.Millisecond, 100, "")
		rec.Record("POST", "/naïve \"q\"\n😀", 2*time.Millisecond, 0, "HTTPError('500')")
		now = now.Add(time.Second)
	}
	st.Merge(rec.Report(nil, 1))
	return st
}

// The document parses as JSON with Locust HEAD's StatsEntryDict keys and
// types (locust/test/test_main.py, test_json_schema), and Python's
// json.dumps(json.loads(doc), indent=4) gives it back byte for byte.
func TestAppendJSON(t *testing.T) {
	st := jsonRun(t)
	doc := st.AppendJSON(nil)
	var entries []map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&entries); err != nil {
		t.Fatalf("%v in:\n%s", err, doc)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries", len(entries))
	}
	keys := []string{"name", "method", "last_request_timestamp", "start_time", "num_requests", "num_none_requests", "num_failures",
		"total_response_time", "max_response_time", "min_response_time", "total_content_length", "response_times", "num_reqs_per_sec", "num_fail_per_sec"}
	text := string(doc)
	last := 0
	for _, k := range keys {
		i := strings.Index(text[last:], `"`+k+`"`)
		if i < 0 {
			t.Fatalf("key %q missing or out of Locust's order:\n%s", k, doc)
		}
		last += i
	}
	e := entries[0]
	if e["name"] != "/" || e["method"] != "GET" || e["num_requests"].(json.Number).String() != "6" {
		t.Errorf("entry %v", e)
	}
	for _, k := range []string{"last_request_timestamp", "start_time", "total_response_time", "max_response_time", "min_response_time"} {
		if !strings.ContainsAny(e[k].(json.Number).String(), ".e") {
			t.Errorf("%s = %v: a Python float has a point", k, e[k])
		}
	}
	rt := e["response_times"].(map[string]any)
	if rt["12"].(json.Number).String() != "3" || rt["150"].(json.Number).String() != "3" {
		t.Errorf("response_times %v", rt)
	}
	if len(entries[1]["num_fail_per_sec"].(map[string]any)) != 3 {
		t.Errorf("num_fail_per_sec %v", entries[1]["num_fail_per_sec"])
	}
	if got := string(st.AppendJSON(nil, []byte(`{"x": 1}`))); !strings.HasSuffix(got, "},\n    {\"x\": 1}\n]") {
		t.Errorf("extra element:\n%s", got)
	}
	if got := string(New(nil).AppendJSON(nil)); got != "[]" {
		t.Errorf("empty: %q", got)
	}

	py, err := exec.LookPath("python3")
	if err != nil {
		testpeer.Missing(t, "python3: %v", err)
		return
	}
	cmd := exec.Command(py, "-c", "import json,sys; d=sys.stdin.read(); sys.stdout.write(json.dumps(json.loads(d), indent=4))")
	cmd.Stdin = bytes.NewReader(doc)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(doc) {
		t.Errorf("Python re-dumps it differently:\n--- cicada\n%s\n--- python\n%s", doc, out)
	}
}
