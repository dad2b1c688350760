//go:build linux

package main

import "testing"

func TestPorts(t *testing.T) {
	for _, tc := range []struct {
		conns, ips int
		min, max   uint16
		ok         bool
	}{
		{10_000_000, 200, 10000, 59999, true},
		{1_000_000, 20, 10000, 59999, true},
		{253 * 55000, 253, 10000, 64999, true},
		{200_000, 3, 0, 0, false},      // not a multiple
		{11_000_200, 200, 0, 0, false}, // 55,001 ports per address
		{1000, 0, 0, 0, false},
		{1000, 254, 0, 0, false},
		{0, 1, 0, 0, false},
	} {
		lo, hi, err := ports(options{conns: tc.conns, ips: tc.ips})
		if (err == nil) != tc.ok || lo != tc.min || hi != tc.max {
			t.Errorf("ports(%d, %d) = %d, %d, %v; want %d, %d, ok %v", tc.conns, tc.ips, lo, hi, err, tc.min, tc.max, tc.ok)
		}
	}
}
