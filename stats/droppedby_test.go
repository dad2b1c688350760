package stats

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// TestDroppedByRecorder: the per-name counts go out with the next report,
// sorted, summing with AddDropped's into Dropped, and are zeroed by Report
// and Clear.
func TestDroppedByRecorder(t *testing.T) {
	r := NewRecorder(nil)
	r.AddDroppedFor("GET", "/b", 2)
	r.AddDroppedFor("GET", "/a", 1)
	r.AddDroppedFor("POST", "/a", 4)
	r.AddDroppedFor("GET", "/b", 3)
	r.AddDroppedFor("GET", "/c", 0)  // ignored
	r.AddDroppedFor("GET", "/c", -1) // ignored
	r.AddDropped(5)                  // not attributed
	rep := r.Report(nil, 1)
	want := []protocol.DroppedName{{Method: "GET", Name: "/a", Count: 1}, {Method: "POST", Name: "/a", Count: 4}, {Method: "GET", Name: "/b", Count: 5}}
	if !reflect.DeepEqual(rep.DroppedBy, want) || rep.Dropped != 15 {
		t.Errorf("report: dropped %d, by %+v; want 15, %+v", rep.Dropped, rep.DroppedBy, want)
	}
	if rep := r.Report(nil, 1); rep.Dropped != 0 || rep.DroppedBy != nil {
		t.Errorf("the next report repeats: %d %+v", rep.Dropped, rep.DroppedBy)
	}
	r.AddDroppedFor("GET", "/a", 1)
	r.Clear()
	if rep := r.Report(nil, 1); rep.Dropped != 0 || rep.DroppedBy != nil {
		t.Errorf("after Clear: %d %+v", rep.Dropped, rep.DroppedBy)
	}
}

// TestDroppedByFold: names beyond MaxEntries are counted under OTHER, on
// the worker and on the master.
func TestDroppedByFold(t *testing.T) {
	r, err := NewRecorderWithOptions(Options{MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"/a", "/b", "/c", "/d", "/a"} {
		r.AddDroppedFor("GET", n, 1)
	}
	rep := r.Report(nil, 1)
	want := []protocol.DroppedName{{Method: OtherMethod, Name: OtherName, Count: 2}, {Method: "GET", Name: "/a", Count: 2}, {Method: "GET", Name: "/b", Count: 1}}
	if !reflect.DeepEqual(rep.DroppedBy, want) {
		t.Errorf("worker fold: %+v; want %+v", rep.DroppedBy, want)
	}
	s, err := NewWithOptions(Options{MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.Merge(rep)
	snap := s.Snapshot()
	// (OTHER, (other names)) sorts first and takes the only slot; the rest fold into it.
	wantM := []protocol.DroppedName{{Method: OtherMethod, Name: OtherName, Count: 5}}
	if !reflect.DeepEqual(snap.DroppedBy, wantM) || snap.Total.Dropped != 5 {
		t.Errorf("master fold: %+v (total %d); want %+v", snap.DroppedBy, snap.Total.Dropped, wantM)
	}
}

// TestDroppedByMerge: the master sums per name across reports and
// workers, sets EntryStats.Dropped on the entries that exist, lists the
// names without requests in DroppedBy only, and forgets them on Reset and
// Clear.
func TestDroppedByMerge(t *testing.T) {
	w1, w2 := NewRecorder(nil), NewRecorder(nil)
	w1.Record("GET", "/a", time.Millisecond, 1, "")
	w1.AddDroppedFor("GET", "/a", 3)
	w2.Record("GET", "/a", time.Millisecond, 1, "")
	w2.AddDroppedFor("GET", "/a", 2)
	w2.AddDroppedFor("TASK", "never ran", 7)
	s := New(nil)
	s.Merge(w1.Report(nil, 1))
	s.Merge(w2.Report(nil, 1))
	snap := s.Snapshot()
	if len(snap.Entries) != 1 || snap.Entries[0].Dropped != 5 || snap.Total.Dropped != 12 {
		t.Fatalf("entries %+v, total dropped %d; want /a with 5, total 12", snap.Entries, snap.Total.Dropped)
	}
	want := []protocol.DroppedName{{Method: "GET", Name: "/a", Count: 5}, {Method: "TASK", Name: "never ran", Count: 7}}
	if !reflect.DeepEqual(snap.DroppedBy, want) {
		t.Errorf("DroppedBy %+v; want %+v", snap.DroppedBy, want)
	}
	for _, tc := range []struct {
		name string
		f    func()
	}{{"Reset", s.Reset}, {"Clear", s.Clear}} {
		w1.AddDroppedFor("GET", "/a", 1)
		s.Merge(w1.Report(nil, 1))
		tc.f()
		snap := s.Snapshot()
		if snap.DroppedBy != nil || snap.Total.Dropped != 0 {
			t.Errorf("after %s: %+v, total %d", tc.name, snap.DroppedBy, snap.Total.Dropped)
		}
		for _, e := range snap.Entries {
			if e.Dropped != 0 {
				t.Errorf("after %s: entry %s dropped %d", tc.name, e.Name, e.Dropped)
			}
		}
	}
}

// TestDroppedByConcurrent: with drops counted while reports are taken, each
// report's per-name counts sum to its Dropped and nothing is lost.
func TestDroppedByConcurrent(t *testing.T) {
	r := NewRecorder(nil)
	const goroutines, each = 4, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r.AddDroppedFor("GET", []string{"/a", "/b", "/c"}[(g+i)%3], 1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var total int64
	check := func() bool {
		rep := r.Report(nil, 1)
		var sum int64
		for _, d := range rep.DroppedBy {
			sum += d.Count
		}
		if sum != rep.Dropped {
			t.Fatalf("a report's names sum to %d, its Dropped is %d", sum, rep.Dropped)
		}
		total += sum
		return true
	}
	for {
		select {
		case <-done:
			check()
			if total != goroutines*each {
				t.Errorf("%d drops reported; want %d", total, goroutines*each)
			}
			return
		default:
			check()
		}
	}
}

func BenchmarkAddDroppedFor(b *testing.B) {
	r := NewRecorder(nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.AddDroppedFor("GET", "/x", 1)
		if i%1024 == 0 {
			r.Report(nil, 1)
		}
	}
}

// BenchmarkMergeDroppedBy is the master's cost of a rate-test report's
// per-name drops: one worker report with 10 names, merged.
func BenchmarkMergeDroppedBy(b *testing.B) {
	s := New(nil)
	rep := &protocol.StatsReport{UserCount: -1}
	for i := range 10 {
		rep.DroppedBy = append(rep.DroppedBy, protocol.DroppedName{Method: "GET", Name: "/api/" + string(rune('a'+i)), Count: 3})
		rep.Dropped += 3
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Merge(rep)
	}
}
