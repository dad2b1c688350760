package web_test

import (
	"bytes"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden compares whole JSON bodies of a deterministic simulated test
// (fake clock, fixed seed) with testdata/golden. Numbers come from package
// stats; after an intended change there, run go test ./web -run Golden
// -update and review the diff.
func TestGolden(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{Workers: 2, Names: []string{"/", "/data.json", "/missing", "/a&b"}})
	routes := map[string]string{}
	routes["requests_ready.json"] = string(e.get(t, "/stats/requests").body)
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"8"}, "spawn_rate": {"4"}})
	e.run(14)
	e.runner.Stats().AddException("deliberate task exception", "  File \"fake.yaml\", line 12, in boom\n", "worker-1")
	routes["requests_running.json"] = string(e.get(t, "/stats/requests").body)
	routes["exceptions.json"] = string(e.get(t, "/exceptions").body)
	routes["tasks.json"] = string(e.get(t, "/tasks").body)
	for name, got := range routes {
		path := filepath.Join("testdata", "golden", name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal([]byte(got), want) {
			t.Errorf("%s differs from the golden file (run with -update after an intended change):\n%s", name, got)
		}
	}
}
