package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/stats"
)

// writeFiles writes name → content into a temporary directory and returns
// the path of the scenario file name main in it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "s.yaml")
}

func feedScenario(feed, class string) string {
	return "feeds:\n" + feed + "\nusers:\n  - name: U\n    wait: constant(0.02)\n" + class + "\n    tasks:\n      - path: /row/${username}?p=${accounts.password}\n"
}

// TestFeedLoadErrors: missing, empty and malformed feeds, and feed fields
// that cannot be honoured, are errors at load naming the file and line.
func TestFeedLoadErrors(t *testing.T) {
	ok := "username,password\na,1\n"
	for _, tc := range []struct {
		name, feed, class string
		files             map[string]string
		want              string
	}{
		{"missing file", "  - {name: accounts, file: nope.csv}", "    feed: accounts", nil, "s.yaml:2:28: feeds[0].file: "},
		{"empty csv", "  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": ""}, "a.csv: the feed is empty"},
		{"header only", "  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": "username,password\n"}, "a.csv: the feed has no rows"},
		{"bad csv line", "  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": "username,password\na,1\nb,\"2\n"}, "a.csv:3: malformed CSV"},
		{"short csv row", "  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": "username,password\na,1\nb\n"}, "a.csv:3: malformed CSV: wrong number of fields"},
		{"bad column", "  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": "user name,password\na,1\n"}, `a.csv:1: column "user name" is not a variable name`},
		{"duplicate column", "  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": "a,a\n1,2\n"}, `a.csv:1: duplicate column "a"`},
		{"bad jsonl line", "  - {name: accounts, file: a.jsonl}", "    feed: accounts", map[string]string{"a.jsonl": "{\"username\":\"a\",\"password\":1}\n\n{\"username\":\n"}, "a.jsonl:3: malformed JSON line"},
		{"jsonl other keys", "  - {name: accounts, file: a.jsonl}", "    feed: accounts", map[string]string{"a.jsonl": "{\"username\":\"a\",\"password\":1}\n{\"username\":\"b\",\"pass\":2}\n"}, "a.jsonl:2: key \"pass\" is not in the first line"},
		{"jsonl not object", "  - {name: accounts, file: a.jsonl}", "    feed: accounts", map[string]string{"a.jsonl": "[1]\n"}, "a.jsonl:1: malformed JSON line"},
		{"empty jsonl", "  - {name: accounts, file: a.jsonl}", "    feed: accounts", map[string]string{"a.jsonl": "\n\n"}, "a.jsonl: the feed is empty"},
		{"other extension", "  - {name: accounts, file: a.txt}", "    feed: accounts", map[string]string{"a.txt": ok}, "a feed file is .csv"},
		{"bad mode", "  - {name: accounts, file: a.csv, mode: once}", "    feed: accounts", map[string]string{"a.csv": ok}, `feeds[0].mode: "once" is not sequential, random or unique`},
		{"bad on_exhausted", "  - {name: accounts, file: a.csv, on_exhausted: wait}", "    feed: accounts", map[string]string{"a.csv": ok}, `"wait" is not stop, recycle or fail`},
		{"random exhausted", "  - {name: accounts, file: a.csv, mode: random, on_exhausted: stop}", "    feed: accounts", map[string]string{"a.csv": ok}, "a random feed is never exhausted"},
		{"duplicate feed", "  - {name: accounts, file: a.csv}\n  - {name: accounts, file: a.csv}", "    feed: accounts", map[string]string{"a.csv": ok}, `duplicate feed "accounts"`},
		{"no file", "  - {name: accounts}", "    feed: accounts", nil, "feeds[0].file: missing"},
		{"unknown feed", "  - {name: accounts, file: a.csv}", "    feed: other", map[string]string{"a.csv": ok}, `users[0].feed: no feed "other"`},
		{"bad take", "  - {name: accounts, file: a.csv}", "    feed: {name: accounts, take: always}", map[string]string{"a.csv": ok}, `"always" is not start`},
		{"unknown column", "  - {name: accounts, file: a.csv}", "    feed: accounts\n    variables: {username: x}", map[string]string{"a.csv": ok}, `variable "username" is also a column of the feed "accounts"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tc.files {
				files[k] = v
			}
			path := writeFiles(t, files)
			src := feedScenario(tc.feed, tc.class)
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load = %v; want an ErrInvalid containing %q\n%s", err, tc.want, src)
			}
		})
	}
}

// TestFeedModes: sequential, recycled, random and unique feeds with the
// rows a set of users gets, and what exhaustion does.
func TestFeedModes(t *testing.T) {
	rows := "username,password\na,1\nb,2\nc,3\n"
	for _, tc := range []struct {
		name, feed, take string
		users            int
		// want: the set of /row/ paths the server must see (exactly);
		// failRow: a FEED failure is expected
		want    []string
		failRow bool
	}{
		{"sequential stop", "mode: sequential, on_exhausted: stop", "accounts", 5, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, false},
		{"sequential fail", "mode: sequential, on_exhausted: fail", "accounts", 4, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, true},
		{"sequential recycle", "mode: sequential", "accounts", 5, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, false},
		{"random", "mode: random", "accounts", 4, nil, false},
		{"unique stop", "mode: unique", "accounts", 5, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, false},
		{"unique fail", "mode: unique, on_exhausted: fail", "accounts", 5, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, true},
		{"unique each task", "mode: unique", "{name: accounts, take: task}", 1, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, false},
		{"jsonl each task", "mode: sequential, on_exhausted: stop", "{name: accounts, take: task}", 1, []string{"/row/a?p=1", "/row/b?p=2", "/row/c?p=3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := "a.csv"
			files := map[string]string{"a.csv": rows}
			if strings.HasPrefix(tc.name, "jsonl") {
				file = "a.jsonl"
				files = map[string]string{"a.jsonl": `{"username":"a","password":1}` + "\n" + `{"username":"b","password":2}` + "\n" + `{"username":"c","password":3}` + "\n"}
			}
			path := writeFiles(t, files)
			src := feedScenario(fmt.Sprintf("  - {name: accounts, file: %s, %s}", file, tc.feed), "    feed: "+tc.take)
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			rc := &recorder{}
			srv := rc.serve(t)
			c := startCluster(t, f, 1, tc.users, srv.URL)
			c.waitStats("rows used", func(s *stats.Snapshot) bool {
				seen := map[string]bool{}
				for _, r := range rc.with("/row/") {
					seen[r] = true
				}
				want := len(tc.want)
				if want == 0 {
					want = 1
				}
				failed := !tc.failRow || failures(s)["FEED accounts"] != ""
				return len(seen) >= want && failed
			})
			if tc.failRow && !strings.Contains(failures(c.m.Snapshot())["FEED accounts"], "exhausted") {
				t.Errorf("FEED failure = %q", failures(c.m.Snapshot())["FEED accounts"])
			}
			got := map[string]bool{}
			for _, r := range rc.with("/row/") {
				got[strings.TrimSuffix(r, "||")] = true
			}
			if tc.want == nil {
				for r := range got {
					if !strings.Contains("/row/a?p=1 /row/b?p=2 /row/c?p=3", r) {
						t.Errorf("random row %q is not a row of the file", r)
					}
				}
				return
			}
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if strings.Join(keys, " ") != strings.Join(tc.want, " ") {
				t.Errorf("rows used = %v; want %v", keys, tc.want)
			}
		})
	}
}

// TestUniqueFeedCluster: a master and two cicada workers share a unique
// feed of 1,000 rows, 64 at a time: every row is used exactly once, then
// every user stops (on_exhausted: stop).
func TestUniqueFeedCluster(t *testing.T) {
	var b strings.Builder
	b.WriteString("id\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "%d\n", i)
	}
	path := writeFiles(t, map[string]string{"ids.csv": b.String()})
	src := `
feeds:
  - {name: ids, file: ids.csv, mode: unique, on_exhausted: stop}
users:
  - name: U
    feed: {name: ids, take: task}
    variables: {w: {worker_index: true}}
    tasks:
      - {path: "/row/${id}?w=${w}", name: row}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recorder{}
	srv := rc.serve(t)
	c := startCluster(t, f, 2, 20, srv.URL)
	c.waitStats("every user stopped after the rows ran out", func(s *stats.Snapshot) bool {
		if s.Total.NumRequests == 0 {
			return false
		}
		for _, w := range c.workers {
			if _, n := w.UserCount(); n > 0 {
				return false
			}
		}
		return true
	})
	got := rc.with("/row/")
	count, byWorker := map[string]int{}, map[string]int{}
	for _, r := range got {
		row, w, _ := strings.Cut(strings.TrimSuffix(r, "||"), "?")
		count[row]++
		byWorker[w]++
	}
	if byWorker["w=0"] == 0 || byWorker["w=1"] == 0 || len(byWorker) != 2 {
		t.Errorf("rows used by worker: %v; want both workers", byWorker)
	}
	bad := 0
	for i := range 1000 {
		if n := count[fmt.Sprintf("/row/%d", i)]; n != 1 && bad < 10 {
			bad++
			t.Errorf("row %d used %d times", i, n)
		}
	}
	if len(got) != 1000 {
		t.Errorf("%d requests; want 1000", len(got))
	}
	if s := c.m.Snapshot(); s.Total.NumFailures != 0 {
		t.Errorf("failures: %s", describe(s))
	}
}

// FuzzFeed: the CSV and JSON-lines parsers never panic, and every row
// they return has one value per column.
func FuzzFeed(f *testing.F) {
	f.Add("a,b\n1,2\n", true)
	f.Add("a\n\"x\ny\"\n", true)
	f.Add(`{"a":1,"b":"x"}`+"\n"+`{"b":"y","a":[1]}`+"\n", false)
	f.Add("{}\n", false)
	f.Fuzz(func(t *testing.T, data string, isCSV bool) {
		parse := parseJSONLFeed
		if isCSV {
			parse = parseCSVFeed
		}
		cols, rows, err := parse("f", []byte(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") && !strings.HasPrefix(err.Error(), "f ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for i, r := range rows {
			if len(r) != len(cols) {
				t.Fatalf("row %d has %d values for %d columns", i, len(r), len(cols))
			}
		}
	})
}
