//go:build linux

package lab

import (
	"strings"
	"testing"
)

const ctSample = `ipv4     2 tcp      6 431999 ESTABLISHED src=198.18.0.1 dst=198.18.1.1 sport=10000 dport=80 src=198.18.1.1 dst=198.18.0.1 sport=80 dport=10000 [ASSURED] mark=0 zone=0 use=2
ipv4     2 tcp      6 119 TIME_WAIT src=198.18.0.1 dst=198.18.1.1 sport=10001 dport=80 src=198.18.1.1 dst=198.18.0.1 sport=80 dport=10001 [ASSURED] mark=0 zone=0 use=2
ipv4     2 tcp      6 59 SYN_SENT src=198.18.0.1 dst=198.18.1.1 sport=10002 dport=80 [UNREPLIED] src=198.18.1.1 dst=198.18.0.1 sport=80 dport=10002 mark=0 zone=0 use=2
ipv4     2 udp      17 29 src=10.0.0.1 dst=10.0.0.2 sport=53 dport=53 [UNREPLIED] src=10.0.0.2 dst=10.0.0.1 sport=53 dport=53 mark=0 zone=0 use=2
ipv4     2 tcp      6 431999 ESTABLISHED src=198.18.0.1 dst=198.18.1.1 sport=10003 dport=80 src=198.18.1.1 dst=198.18.0.1 sport=80 dport=10003 [ASSURED] mark=0 zone=0 use=2
`

func TestParseConntrack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		est     int
		other   map[string]int
		wantErr bool
	}{
		{"empty", "", 0, map[string]int{}, false},
		{"sample", ctSample, 2, map[string]int{"TIME_WAIT": 1, "SYN_SENT": 1}, false},
		{"short lines ignored", "ipv4 2 tcp\n\n", 0, map[string]int{}, false},
		{"tcp without a state", "ipv4 2 tcp 6 10 src=1.2.3.4 dst=5.6.7.8\n", 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := Conntrack{Other: map[string]int{}}
			err := parseConntrack([]byte(tc.in), &ct)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseConntrack = %v; want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if ct.Established != tc.est || len(ct.Other) != len(tc.other) {
				t.Fatalf("got %+v; want %d established, other %v", ct, tc.est, tc.other)
			}
			for k, v := range tc.other {
				if ct.Other[k] != v {
					t.Errorf("%s = %d; want %d", k, ct.Other[k], v)
				}
			}
		})
	}
}

func FuzzParseConntrack(f *testing.F) {
	f.Add([]byte(ctSample))
	f.Add([]byte("ipv4 2 tcp 6 10 src=1.2.3.4\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ct := Conntrack{Other: map[string]int{}}
		if err := parseConntrack(raw, &ct); err != nil {
			return
		}
		n := ct.Established
		for _, v := range ct.Other {
			n += v
		}
		if lines := strings.Count(string(raw), "\n") + 1; n > lines {
			t.Fatalf("%d entries from %d lines", n, lines)
		}
	})
}

func BenchmarkParseConntrack(b *testing.B) {
	raw := []byte(strings.Repeat(ctSample, 1000)) // 5,000 entries
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		ct := Conntrack{Other: map[string]int{}}
		if err := parseConntrack(raw, &ct); err != nil || ct.Established != 2000 {
			b.Fatalf("%+v %v", ct, err)
		}
	}
}
