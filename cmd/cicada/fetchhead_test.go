package main

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/protocol"
)

// TestServedLocustfileFromLocustHEAD replays the answer a real Locust HEAD
// master (2.46.4.dev0) sent to a -f - worker's locustfile request (the
// frame captured in ../shared/testdata/locust-frames/cap_lf.jsonl, copied
// to testdata): its {"locustfiles": [{"filename", "contents"}]} reaches
// the locustfile reader. That file computes a module-level value from
// locust.__version__ (and registers event hooks), so the reader refuses it
// naming the file, line and construct; the same answer with a file inside
// the subset loads its classes.
func TestServedLocustfileFromLocustHEAD(t *testing.T) {
	h, err := os.ReadFile("testdata/locust-head-locustfile-answer.hex")
	if err != nil {
		t.Fatal(err)
	}
	frame, err := hex.DecodeString(strings.TrimSpace(string(h)))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := protocol.Decode(frame)
	if err != nil || msg.Type != protocol.TypeLocustfile {
		t.Fatalf("Decode = %v, %v; want a locustfile message", msg.Type, err)
	}
	data := msg.Data.(*protocol.Locustfile).Data
	_, err = (*app)(nil).parseServedScenario(data)
	if !errors.Is(err, ErrScenarioFetch) || !strings.Contains(err.Error(), "locustfile.py (from the master):5:1: module-level assignment HEAD") {
		t.Fatalf("HEAD's served locustfile: %v; want a refusal at line 5 naming the assignment", err)
	}

	files := data["locustfiles"].([]any)
	files[0].(map[string]any)["contents"] = "from locust import HttpUser, task, constant\n\n" +
		"class WebUser(HttpUser):\n    wait_time = constant(0.5)\n    @task(3)\n    def fast(self):\n        self.client.get(\"/fast\")\n" +
		"    @task\n    def slow(self):\n        self.client.get(\"/slow\")\n"
	f, err := (*app)(nil).parseServedScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Scenario.Classes; len(c) != 1 || c[0].Name != "WebUser" || len(c[0].Tasks) != 2 {
		t.Fatalf("classes %+v; want WebUser with two tasks", c)
	}
}
