package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/master"
)

func TestLoadForm(t *testing.T) {
	const users = "users: [{name: U, tasks: [{path: /}]}]\n"
	tests := []struct {
		name    string
		yaml    string
		want    *RateLoad
		wantErr string // a part of the error naming the field
	}{
		{"none", "", nil, ""},
		{"constant", "load: {rate: 100, max_in_flight: 50}\n",
			&RateLoad{Stages: []master.RateStage{{Rate: 100}}, MaxInFlight: 50}, ""},
		{"stages", "load:\n  max_in_flight: 8\n  stages:\n    - {duration: 30s, rate: 10}\n    - {duration: 1m, rate: 2.5}\n",
			&RateLoad{Stages: []master.RateStage{{Duration: 30 * time.Second, Rate: 10}, {Duration: time.Minute, Rate: 2.5}}, MaxInFlight: 8}, ""},
		{"ramp", "load: {max_in_flight: 2, stages: [{duration: 10s, rate: 50, ramp: true}, {duration: 20s, rate: 50}]}\n",
			&RateLoad{Stages: []master.RateStage{{Duration: 10 * time.Second, Rate: 50, Ramp: true}, {Duration: 20 * time.Second, Rate: 50}}, MaxInFlight: 2}, ""},
		{"ramp not a bool", "load: {max_in_flight: 2, stages: [{duration: 10s, rate: 50, ramp: maybe}]}\n", nil, "load.stages[0].ramp"},
		{"both", "load: {rate: 1, max_in_flight: 1, stages: [{duration: 1s, rate: 1}]}\n", nil, "either rate or stages"},
		{"neither", "load: {max_in_flight: 1}\n", nil, "needs rate"},
		{"no cap", "load: {rate: 5}\n", nil, "load.max_in_flight"},
		{"zero cap", "load: {rate: 5, max_in_flight: 0}\n", nil, "load.max_in_flight"},
		{"negative rate", "load: {rate: -5, max_in_flight: 1}\n", nil, "load.rate"},
		{"rate not a number", "load: {rate: fast, max_in_flight: 1}\n", nil, "load.rate"},
		{"decreasing stages", "load: {max_in_flight: 1, stages: [{duration: 2s, rate: 1}, {duration: 1s, rate: 1}]}\n", nil, "load.stages[1].duration"},
		{"stage without rate", "load: {max_in_flight: 1, stages: [{duration: 2s}]}\n", nil, "load.stages[0]"},
		{"unknown key", "load: {rate: 1, max_in_flight: 1, vus: 3}\n", nil, "load.vus"},
		{"with user stages", "load: {rate: 1, max_in_flight: 1}\nstages: [{duration: 1s, users: 1}]\n", nil, "load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("r.yaml", []byte(users+tt.yaml), nil)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "r.yaml") {
					t.Fatalf("Parse = %v, want an ErrInvalid naming the file and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(f.Load) != fmt.Sprint(tt.want) {
				t.Errorf("Load = %+v, want %+v", f.Load, tt.want)
			}
		})
	}
}
