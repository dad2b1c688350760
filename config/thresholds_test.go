package config

import (
	"errors"
	"slices"
	"testing"
)

func TestThresholdAndJSONOptions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		conf       string
		thresholds []string
		jsonFile   string
		err        bool
	}{
		{"repeated flag, commas and spaces kept", []string{"--threshold", "p99<500ms", "--threshold", "avg{GET /a,b}<3 window=10s"}, "",
			[]string{"p99<500ms", "avg{GET /a,b}<3 window=10s"}, "", false},
		{"config file", nil, "threshold = fail_ratio<1%\njson-file = out\n", []string{"fail_ratio<1%"}, "out", false},
		{"worker refuses --threshold", []string{"--worker", "--threshold", "p99<5"}, "", nil, "", true},
		{"worker refuses --json-file", []string{"--worker", "--json-file", "x"}, "", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseIn(t, tc.args, nil, tc.conf)
			if tc.err {
				if !errors.Is(err, ErrUsage) {
					t.Fatalf("err %v, want ErrUsage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Thresholds, tc.thresholds) || cfg.JSONFile != tc.jsonFile {
				t.Errorf("Thresholds %q, JSONFile %q", cfg.Thresholds, cfg.JSONFile)
			}
		})
	}
}
