package config

import (
	"errors"
	"strings"
	"testing"
)

func TestArrivalRateOptions(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantRate  float64
		wantUsers int
		wantErr   string
	}{
		{"none", nil, nil, 0, 0, ""},
		{"rate and cap", []string{"--arrival-rate", "100", "--max-in-flight", "50"}, nil, 100, 50, ""},
		{"cap from -u", []string{"--arrival-rate", "2.5", "-u", "7"}, nil, 2.5, 7, ""},
		{"same -u and cap", []string{"--arrival-rate", "1", "-u", "7", "--max-in-flight", "7"}, nil, 1, 7, ""},
		{"env", nil, map[string]string{"CICADA_ARRIVAL_RATE": "30", "CICADA_MAX_IN_FLIGHT": "3"}, 30, 3, ""},
		{"no cap", []string{"--arrival-rate", "100"}, nil, 0, 0, "--max-in-flight"},
		{"cap without rate", []string{"--max-in-flight", "5"}, nil, 0, 0, "only with --arrival-rate"},
		{"zero rate", []string{"--arrival-rate", "0", "--max-in-flight", "5"}, nil, 0, 0, "--arrival-rate"},
		{"negative rate", []string{"--arrival-rate", "-3", "--max-in-flight", "5"}, nil, 0, 0, "--arrival-rate"},
		{"NaN rate", []string{"--arrival-rate", "NaN", "--max-in-flight", "5"}, nil, 0, 0, "--arrival-rate"},
		{"huge rate", []string{"--arrival-rate", "1e9", "--max-in-flight", "5"}, nil, 0, 0, "--arrival-rate"},
		{"negative cap", []string{"--arrival-rate", "3", "--max-in-flight", "-5"}, nil, 0, 0, "--max-in-flight"},
		{"contradicting -u", []string{"--arrival-rate", "3", "--max-in-flight", "5", "-u", "6"}, nil, 0, 0, "contradicts -u"},
		{"on a worker", []string{"--worker", "--arrival-rate", "3", "--max-in-flight", "5"}, nil, 0, 0, "a worker gets its share"},
		{"with the data plane", []string{"--arrival-rate", "3", "--max-in-flight", "5", "--dataplane", "afpacket", "--interface", "x", "--client-ips", "198.18.0.1"}, nil, 0, 0, "--dataplane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseIn(t, tt.args, tt.env, "")
			if tt.wantErr != "" {
				if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) = %v, want ErrUsage with %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ArrivalRate != tt.wantRate || cfg.Users != tt.wantUsers || tt.wantRate > 0 && (cfg.MaxInFlight != tt.wantUsers || !cfg.UsersSet) {
				t.Errorf("rate %v, users %d (set %v), cap %d; want %v, %d", cfg.ArrivalRate, cfg.Users, cfg.UsersSet, cfg.MaxInFlight, tt.wantRate, tt.wantUsers)
			}
		})
	}
}
