package master

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/protocol"
)

// TestOfferKeepsLatest: a writer that lags never makes the loop wait, and
// finds the newest frame when it comes back.
func TestOfferKeepsLatest(t *testing.T) {
	ch := make(chan frame, 1)
	for users := int64(1); users <= 3; users++ {
		offer(ch, frame{users: users}) // must not block
	}
	if f := <-ch; f.users != 3 {
		t.Errorf("pending frame has users %d; want the latest, 3", f.users)
	}
	select {
	case f := <-ch:
		t.Errorf("a second frame (users %d) was pending; want one", f.users)
	default:
	}
}

// TestSinkWritesWhileRunning: the loop's ticks feed both outputs while the
// test runs, not only at the end: the CSV files and the console table
// show a report soon after it is merged.
func TestSinkWritesWhileRunning(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.PrintStats = true
	o.UserClasses = []UserClass{{Name: "A"}}
	prefix := filepath.Join(t.TempDir(), "live")
	o.CSVPrefix = prefix
	var out syncBuf
	o.Stderr = &out
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(skipCheck)
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn) // reports of a worker never sent a spawn are not merged
	w.send(protocol.TypeStats, report(5, 0, map[string]int64{"A": 2}))
	eventually(t, waitShort, "the report in _stats.csv", func() bool {
		b, err := os.ReadFile(prefix + "_stats.csv")
		return err == nil && strings.Contains(string(b), ",Aggregated,5,0,")
	})
	eventually(t, waitShort, "the user count in the history", func() bool {
		b, err := os.ReadFile(prefix + "_stats_history.csv")
		return err == nil && strings.Contains(string(b), "\r\n") && historyHasUsers(string(b), "2")
	})
	eventually(t, waitShort, "the report in the console table", func() bool {
		return strings.Contains(out.String(), "GET      /x")
	})
	select {
	case <-h.done:
		t.Fatal("Run returned before Quit")
	default:
	}
	h.m.Quit()
	if _, err := h.wait(); err != nil {
		t.Fatal(err)
	}
}

// historyHasUsers reports whether a data row of a history file has the
// user count users in its User Count column.
func historyHasUsers(csv, users string) bool {
	rows := strings.Split(strings.TrimSuffix(csv, "\r\n"), "\r\n")
	if len(rows) < 2 {
		return false
	}
	col := slices.Index(strings.Split(rows[0], ","), `"User Count"`)
	if col < 0 {
		col = slices.Index(strings.Split(rows[0], ","), "User Count")
	}
	for _, r := range rows[1:] {
		if f := strings.Split(r, ","); col >= 0 && col < len(f) && f[col] == users {
			return true
		}
	}
	return false
}
