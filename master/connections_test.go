package master

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// secondRoundRun runs a headless master with two scripted cicada workers
// that report connection counters, one self-diagnosis warning (with warn)
// and the given second-round results; it returns the exit code, the logs,
// the final output and the connections CSV.
func secondRoundRun(t *testing.T, warn bool, results [2]map[string]any) (int, *logBuf, string, string) {
	t.Helper()
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.ExpectWorkers = 2
	o.Users = 10
	o.SpawnRate = 100
	o.RunTime = 2 * time.Second
	o.UserClasses = []UserClass{{Name: "A"}}
	o.SecondRound = true
	o.FinalReportTimeout = 2 * time.Second
	o.CSVPrefix = filepath.Join(t.TempDir(), "run")
	var out syncBuf
	o.Stderr = &out
	h := startMaster(t, o, logs)
	ws := [2]*fakeWorker{h.worker("wa_1"), h.worker("wb_1")}
	for _, w := range ws {
		w.ready(skipCheck)
		stop := w.beatEvery(100*time.Millisecond, func() string { return protocol.StateRunning })
		t.Cleanup(stop)
	}
	for i, w := range ws {
		sp := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn)
		n := sp.UserClassesCount["A"]
		w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: sp.UserClassesCount, UserCount: n})
		w.send(protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateRunning, CPUUsage: 1, MemoryUsage: 1 << 20,
			Connections: &protocol.ConnCounters{Open: n, Established: n, Connects: n + int64(i), Reconnects: int64(i),
				Closes: map[string]int64{"server closed idle": int64(i)}, ConnectErrors: map[string]int64{"local ports exhausted": 2, "connection refused": 1}}})
	}
	if warn {
		ws[0].send(protocol.TypeCicadaWarning, &protocol.Custom{Data: map[string]any{"kind": "open-files", "message": "this worker is to hold 25000 connections but its open-files limit (RLIMIT_NOFILE) is 20000"}})
	}
	for i, w := range ws {
		w.expect(protocol.TypeCicadaSecondRound)
		w.send(protocol.TypeCicadaSecondRoundResult, &protocol.Custom{Data: results[i]})
	}
	for _, w := range ws {
		w.expect(protocol.TypeQuit)
		w.send(protocol.TypeStats, report(5, 0, map[string]int64{"A": 0}))
		w.send(protocol.TypeQuit, nil)
	}
	code, err := h.wait()
	if err != nil {
		t.Fatal(err)
	}
	if st := h.m.Status(); warn && (len(st.Warnings) != 1 || st.Warnings[0].Kind != "open-files") || !st.SecondRound.Done || st.SecondRound.Users != 10 {
		t.Errorf("Status().Warnings = %+v, SecondRound = %+v; want one open-files warning and a done round of 10 users", st.Warnings, st.SecondRound)
	}
	b, err := os.ReadFile(o.CSVPrefix + "_connections.csv")
	if err != nil {
		t.Fatal(err)
	}
	return code, logs, out.String(), string(b)
}

func roundResult(users, reused, reconnected, failed int64) map[string]any {
	m := map[string]any{"users": users, "reused": reused, "reconnected": reconnected, "failed": failed, "errors": map[string]any{}}
	if failed > 0 {
		m["errors"] = map[string]any{"connection reset": failed}
	}
	return m
}

func TestSecondRoundAllReused(t *testing.T) {
	code, logs, out, csv := secondRoundRun(t, true, [2]map[string]any{roundResult(5, 5, 0, 0), roundResult(5, 5, 0, 0)})
	if code != ExitCodeGeneratorLimited { // the open-files warning: the generator was the limit
		t.Errorf("exit code %d; want %d; logs:\n%s", code, ExitCodeGeneratorLimited, logs)
	}
	if !strings.Contains(logs.String(), "The load generator itself was the limit (the workers' warnings above): exit code 98") {
		t.Errorf("no line saying why the exit code is 98; logs:\n%s", logs)
	}
	const line = "Second round: 10 users, 10 reused their connection, 0 reconnected, 0 failed"
	if !logs.has(line) || !strings.Contains(out, line) {
		t.Errorf("%q missing from logs or output; output:\n%s", line, out)
	}
	for _, want := range []string{
		"Connections (worker)", "Total", "Connect errors: 4 local ports exhausted (load generator), 2 connection refused (server/network)",
		"Closes by cause: 1 server closed idle",
		"Load generator warnings", "[open-files]: this worker is to hold 25000 connections",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !logs.has("Worker wa_1 (index 0) load generator warning [open-files]") {
		t.Errorf("warning not logged; logs:\n%s", logs)
	}
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "Worker,Open,Established,Peak established,Connects/s,Connects,Reconnects") ||
		!strings.HasPrefix(lines[3], "Total,10,10,10,") {
		t.Errorf("connections CSV:\n%s", csv)
	}
}

func TestSecondRoundReconnectFailsRun(t *testing.T) {
	code, logs, out, _ := secondRoundRun(t, false, [2]map[string]any{roundResult(5, 5, 0, 0), roundResult(5, 3, 1, 1)})
	if code != 1 {
		t.Errorf("exit code %d; want 1 (not every user reused its connection)", code)
	}
	const line = "Second round: 10 users, 8 reused their connection, 1 reconnected, 1 failed (1 connection reset)"
	if !logs.has(line) || !strings.Contains(out, line) {
		t.Errorf("%q missing; output:\n%s\nlogs:\n%s", line, out, logs)
	}
}

func TestSecondRoundSummary(t *testing.T) {
	tests := []struct {
		r    SecondRound
		pass bool
		want string
	}{
		{SecondRound{Started: true, Done: true, Users: 3, Reused: 3}, true, "Second round: 3 users, 3 reused their connection, 0 reconnected, 0 failed"},
		{SecondRound{Started: true, Done: true}, false, "Second round: 0 users, 0 reused their connection, 0 reconnected, 0 failed"},
		{SecondRound{Started: true, Done: true, Users: 3, Reused: 3, Pending: 1}, false, "; 1 worker(s) did not answer"},
		{SecondRound{Started: true, Done: true, Users: 3, Reused: 3, Unchecked: 5}, false, "5 users on workers without second-round support not checked"},
		{SecondRound{}, false, "not completed"},
	}
	for _, tt := range tests {
		if got := tt.r.Passed(); got != tt.pass {
			t.Errorf("%+v.Passed() = %v; want %v", tt.r, got, tt.pass)
		}
		if got := tt.r.String(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v.String() = %q; want it to contain %q", tt.r, got, tt.want)
		}
	}
}
