package main

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/scenario"
)

// TestMasterOptionsStages checks that a scenario file's load shape reaches
// the master as is (one Stage type, no conversion), and that the master's
// copy does not alias the file's.
func TestMasterOptionsStages(t *testing.T) {
	f, err := scenario.Parse("shape.yaml", []byte(`
users:
  - name: U
    tasks:
      - path: /
stages:
  - {duration: 10, users: 5, spawn_rate: 2}
  - {duration: 30s, users: 1}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{cfg: &config.Config{}, file: f}
	got := a.masterOptions(slog.New(slog.NewTextHandler(io.Discard, nil)), true, 0).Stages
	want := []master.Stage{{Duration: 10 * time.Second, Users: 5, SpawnRate: 2}, {Duration: 30 * time.Second, Users: 1, SpawnRate: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("masterOptions().Stages = %+v; want %+v", got, want)
	}
	got[0].Users = 99
	if f.Stages[0].Users != 5 {
		t.Errorf("masterOptions().Stages aliases the scenario file's stages")
	}
}
