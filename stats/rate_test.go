package stats

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// TestRecordCorrected: Locust's fields take the service time, the exact
// histogram the corrected one; the dropped count travels in the report and
// sums on the master until Clear or Reset.
func TestRecordCorrected(t *testing.T) {
	tests := []struct {
		name               string
		service, corrected time.Duration
		wantLocustMax      float64 // ms
		wantExactMS        float64 // the exact p100, ms
	}{
		{"on time", 20 * time.Millisecond, 20 * time.Millisecond, 20, 20},
		{"late by two seconds", 20 * time.Millisecond, 2020 * time.Millisecond, 20, 2020},
		{"corrected below service is raised", 20 * time.Millisecond, time.Millisecond, 20, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(nil)
			r.RecordCorrected("GET", "/x", tt.service, tt.corrected, 10, "")
			r.AddDropped(3)
			r.AddDropped(-5) // ignored
			rep := r.Report(nil, 1)
			if rep.Dropped != 3 {
				t.Errorf("report Dropped = %d, want 3", rep.Dropped)
			}
			if r.Report(nil, 1).Dropped != 0 {
				t.Error("the next report repeats the dropped count")
			}
			s := New(nil)
			s.Merge(rep)
			s.Merge(&protocol.StatsReport{Dropped: 4, UserCount: -1})
			snap := s.Snapshot()
			if snap.Total.Dropped != 7 {
				t.Errorf("merged Dropped = %d, want 7", snap.Total.Dropped)
			}
			e := snap.Entries[0]
			if e.MaxResponseTime != tt.wantLocustMax || e.TotalResponseTime != tt.wantLocustMax {
				t.Errorf("Locust max/total = %v/%v ms, want the service time %v", e.MaxResponseTime, e.TotalResponseTime, tt.wantLocustMax)
			}
			if got := e.Percentile(1); float64(got) != tt.wantLocustMax {
				t.Errorf("Locust p100 = %d, want %v", got, tt.wantLocustMax)
			}
			if got, ok := e.ExactPercentile(1); !ok || got < tt.wantExactMS*0.99 || got > tt.wantExactMS*1.01 {
				t.Errorf("exact p100 = %v (%v), want about %v", got, ok, tt.wantExactMS)
			}
			s.Reset()
			if s.Snapshot().Total.Dropped != 0 {
				t.Error("Reset kept the dropped count")
			}
			s.Merge(&protocol.StatsReport{Dropped: 2, UserCount: -1})
			s.Clear()
			if s.Snapshot().Total.Dropped != 0 {
				t.Error("Clear kept the dropped count")
			}
		})
	}
}

func BenchmarkRecordCorrected(b *testing.B) {
	r := NewRecorder(nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.RecordCorrected("GET", "/x", 3*time.Millisecond, time.Duration(i%1000)*time.Millisecond, 10, "")
	}
}
