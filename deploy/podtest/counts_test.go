package podtest

import (
	"strings"
	"testing"
)

const tableTail = `[2026-12-02 03:30:17,539] jdbg/INFO/locust.main: Shutting down (exit code 0)
Type     Name      # reqs      # fails |    Avg     Min     Max    Med |   req/s  failures/s
--------|--------|-------|-------------|-------|-------|-------|-------|--------|-----------
GET      /          2495     0(0.00%) |      0       0      61      0 |  249.51        0.00
--------|--------|-------|-------------|-------|-------|-------|-------|--------|-----------
         Aggregated 2495     3(0.12%) |      0       0      61      0 |  249.51        0.00

Response time percentiles (approximated)
         Aggregated   0      0      0      0      1      1      3      5     29     62     62   9999
`

func TestFinalCounts(t *testing.T) {
	before := "         Aggregated  7  0(0.00%) | 0 0 0 0 | 0 0\n"
	tests := []struct {
		name         string
		logs         string
		reqs, fails  int64
		wantErrorHas string
	}{
		{"final table", before + tableTail, 2495, 3, ""},
		{"no shutdown line", before, 0, 0, "Shutting down"},
		{"no row after shutdown", "Shutting down (exit code 0)\nType Name\n", 0, 0, "no Aggregated"},
		{"bad count", "Shutting down\n Aggregated x 0(0.00%)\n", 0, 0, "Aggregated row"},
		{"bad failures", "Shutting down\n Aggregated 5 y(0.00%)\n", 0, 0, "Aggregated row"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, f, err := finalCounts(tc.logs)
			if tc.wantErrorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrorHas) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErrorHas)
				}
				return
			}
			if err != nil || r != tc.reqs || f != tc.fails {
				t.Fatalf("got %d, %d, %v; want %d, %d", r, f, err, tc.reqs, tc.fails)
			}
		})
	}
}

func FuzzFinalCounts(f *testing.F) {
	f.Add(tableTail)
	f.Add("Shutting down\n Aggregated 5 1(0.00%)\n")
	f.Fuzz(func(t *testing.T, logs string) {
		r, fl, err := finalCounts(logs)
		if err == nil && (!strings.Contains(logs, "Shutting down") || !strings.Contains(logs, "Aggregated")) {
			t.Fatalf("counts %d, %d from logs without a valid row", r, fl)
		}
	})
}
