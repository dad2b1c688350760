package config

import (
	"errors"
	"io"
	"testing"
)

// An explicit spawn rate of 0 (or a non-finite one) is refused, not
// replaced by the default 1; an unset rate stays 0 ("not set").
func TestSpawnRateValidation(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		wantOK bool
		want   float64
	}{
		{"unset", nil, nil, true, 0},
		{"-r 2.5", []string{"-r", "2.5"}, nil, true, 2.5},
		{"-r 0", []string{"-r", "0"}, nil, false, 0},
		{"--hatch-rate 0", []string{"--hatch-rate", "0"}, nil, false, 0},
		{"env 0", nil, map[string]string{"LOCUST_SPAWN_RATE": "0"}, false, 0},
		{"-r -1", []string{"-r", "-1"}, nil, false, 0},
		{"-r NaN", []string{"-r", "NaN"}, nil, false, 0},
		{"-r +Inf", []string{"-r", "+Inf"}, nil, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := NewParser(io.Discard, func(k string) string { return tt.env[k] }, t.TempDir(), t.TempDir()).Parse(tt.args)
			if !tt.wantOK {
				if !errors.Is(err, ErrUsage) {
					t.Errorf("Parse(%q) error = %v; want ErrUsage", tt.args, err)
				}
				return
			}
			if err != nil || cfg.SpawnRate != tt.want {
				t.Errorf("Parse(%q) = %v, %v; want SpawnRate %v", tt.args, cfg, err, tt.want)
			}
		})
	}
}
