package master

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/master/dispatch"
	"github.com/cicada-load/cicada/protocol"
)

// Counts and rates the dispatcher cannot honour are refused by New (the
// command line, load shapes) with the reason, never replaced.
func TestOptionsRefuseCountsBeyondCeilings(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		want    error
		wantSub string
	}{
		{"huge users", Options{Users: 1_000_000_000_000, SpawnRate: 1_000_000_000_000}, ErrBadUserCount, "above the ceiling"},
		{"rate 1e-300", Options{SpawnRate: 1e-300}, ErrBadSpawnRate, "below the least rate"},
		{"rate 1e308", Options{SpawnRate: 1e308}, ErrBadSpawnRate, "above the ceiling"},
		{"stage users", Options{Stages: []Stage{{Duration: time.Second, Users: dispatch.MaxUsers + 1}}}, ErrBadUserCount, "stage 0"},
		{"stage rate", Options{Stages: []Stage{{Duration: time.Second, Users: 1, SpawnRate: 1e-300}}}, ErrBadSpawnRate, "stage 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.BindHost, tt.o.BindPort = "127.0.0.1", -1
			m, err := New(tt.o)
			if err == nil {
				_ = m.Close()
			}
			if !errors.Is(err, ErrOptions) || !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("New(%s) error = %v; want ErrOptions and %v saying %q", tt.name, err, tt.want, tt.wantSub)
			}
		})
	}
}

// Start (the web UI's /swarm) refuses them too, with a message naming the
// ceiling; one request with 10^12 users used to kill the master.
func TestStartRefusesCountsBeyondCeilings(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("w1")
	w.ready(skipCheck)
	tests := []struct {
		users   int
		rate    float64
		want    error
		wantSub string
	}{
		{1_000_000_000_000, 1_000_000_000_000, ErrBadUserCount, "above the ceiling of 10000000 users"},
		{1, 1e308, ErrBadSpawnRate, "above the ceiling"},
		{1, 1e-300, ErrBadSpawnRate, "below the least rate"},
		{-1, 1, ErrBadUserCount, "negative"},
	}
	for _, tt := range tests {
		err := h.m.Start(tt.users, tt.rate, nil)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantSub) {
			t.Errorf("Start(%d, %v) = %v; want %v saying %q", tt.users, tt.rate, err, tt.want, tt.wantSub)
		}
	}
	if s := h.m.Status(); s.State != protocol.StateReady {
		t.Errorf("Status().State = %s after refused starts; want %s", s.State, protocol.StateReady)
	}
	// The master still works.
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect("spawn")
}
