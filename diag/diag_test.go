package diag

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestCheck(t *testing.T) {
	base := Limits{OpenFiles: 20000, OpenFilesHard: 20000, FilesInUse: 10, SystemFilesMax: 1 << 21, SystemFilesUsed: 1000, PortLow: 32768, PortHigh: 60999}
	dst := ap("127.0.0.1:80")
	tests := []struct {
		name      string
		limits    Limits
		plan      Plan
		timeWait  map[netip.AddrPort]int
		wantKinds []string
		wantText  []string
	}{
		{"within limits", base, Plan{Users: 14000, PerDestination: map[netip.AddrPort]int{dst: 14000}}, nil, nil, nil},
		{"open files", base, Plan{Users: 25000, PerDestination: map[netip.AddrPort]int{dst: 25000}, SourceIPs: 2}, nil,
			[]string{KindOpenFiles}, []string{"RLIMIT_NOFILE", "EMFILE", "hard limit is 20000", "25042"}},
		{"soft below hard", Limits{OpenFiles: 1024, OpenFilesHard: 20000, FilesInUse: 8, PortLow: 32768, PortHigh: 60999, SystemFilesMax: -1},
			Plan{Users: 5000}, nil, []string{KindOpenFiles}, []string{"ulimit -n 5040"}},
		{"unlimited open files", Limits{OpenFiles: -1, OpenFilesHard: -1, PortLow: 1, PortHigh: 65535, SystemFilesMax: -1}, Plan{Users: 1 << 20}, nil, nil, nil},
		{"system files", Limits{OpenFiles: -1, SystemFilesMax: 10000, SystemFilesUsed: 9000}, Plan{Users: 5000}, nil,
			[]string{KindSystemFiles}, []string{"fs.file-max", "ENFILE"}},
		{"ports", Limits{OpenFiles: 1 << 20, PortLow: 40000, PortHigh: 40999, SystemFilesMax: -1},
			Plan{Users: 2500, PerDestination: map[netip.AddrPort]int{dst: 2500}}, nil,
			[]string{KindPorts}, []string{"EADDRNOTAVAIL", "--source-ips with at least 3", "40000-40999", "ip_local_port_range"}},
		{"ports with source IPs", Limits{OpenFiles: 1 << 20, PortLow: 40000, PortHigh: 40999, SystemFilesMax: -1},
			Plan{Users: 2500, PerDestination: map[netip.AddrPort]int{dst: 2500}, SourceIPs: 6}, nil, nil, nil},
		{"past half the ports", Limits{OpenFiles: 1 << 20, PortLow: 40000, PortHigh: 40999, SystemFilesMax: -1},
			Plan{Users: 2500, PerDestination: map[netip.AddrPort]int{dst: 2500}, SourceIPs: 3}, nil,
			[]string{KindPortsSlow}, []string{"even ports first", "at least 6 addresses"}},
		{"time wait eats ports", Limits{OpenFiles: 1 << 20, PortLow: 40000, PortHigh: 40999, SystemFilesMax: -1},
			Plan{Users: 900, PerDestination: map[netip.AddrPort]int{dst: 900}}, map[netip.AddrPort]int{dst: 200},
			[]string{KindPorts, KindTimeWait}, []string{"less 200 in TIME_WAIT", "TIME_WAIT"}},
		{"other destination", Limits{OpenFiles: 1 << 20, PortLow: 40000, PortHigh: 40999, SystemFilesMax: -1},
			Plan{Users: 900, PerDestination: map[netip.AddrPort]int{dst: 450, ap("127.0.0.1:81"): 450}}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := Check(tt.limits, tt.plan, tt.timeWait)
			var kinds []string
			var all strings.Builder
			for _, w := range ws {
				kinds = append(kinds, w.Kind)
				all.WriteString(w.Message + "\n")
			}
			if strings.Join(kinds, ",") != strings.Join(tt.wantKinds, ",") {
				t.Fatalf("Check kinds = %v; want %v\n%s", kinds, tt.wantKinds, all.String())
			}
			for _, s := range tt.wantText {
				if !strings.Contains(all.String(), s) {
					t.Errorf("Check messages lack %q:\n%s", s, all.String())
				}
			}
		})
	}
}

func TestParseSourceIPs(t *testing.T) {
	tests := []struct {
		in    string
		first string
		last  string
		n     int
	}{
		{"127.0.0.1-127.0.0.16", "127.0.0.1", "127.0.0.16", 16},
		{"127.0.0.1-3", "127.0.0.1", "127.0.0.3", 3},
		{"127.0.0.0/28", "127.0.0.1", "127.0.0.14", 14},
		{"127.0.0.8/31", "127.0.0.8", "127.0.0.9", 2},
		{"10.0.0.1", "10.0.0.1", "10.0.0.1", 1},
		{"127.0.0.1, 127.0.0.2,127.0.0.1", "127.0.0.1", "127.0.0.2", 2},
		{"127.0.0.250-127.0.1.2", "127.0.0.250", "127.0.1.2", 9},
		{"fd00::1-fd00::4", "fd00::1", "fd00::4", 4},
		{"fd00::/126", "fd00::", "fd00::3", 4},
	}
	for _, tt := range tests {
		got, err := ParseSourceIPs(tt.in)
		if err != nil {
			t.Errorf("ParseSourceIPs(%q) error %v", tt.in, err)
			continue
		}
		if len(got) != tt.n || got[0].String() != tt.first || got[len(got)-1].String() != tt.last {
			t.Errorf("ParseSourceIPs(%q) = %d addresses %v..%v; want %d %s..%s", tt.in, len(got), got[0], got[len(got)-1], tt.n, tt.first, tt.last)
		}
	}
	for _, bad := range []string{"", "x", "127.0.0.5-127.0.0.1", "127.0.0.1-fd00::1", "127.0.0.1-300", "10.0.0.0/33", "10.0.0.0/8", " , "} {
		if _, err := ParseSourceIPs(bad); !errors.Is(err, ErrSourceIPs) {
			t.Errorf("ParseSourceIPs(%q) error = %v; want ErrSourceIPs", bad, err)
		}
	}
}

func FuzzParseSourceIPs(f *testing.F) {
	for _, s := range []string{"127.0.0.1-127.0.0.16", "127.0.0.0/28", "fd00::/120", "1.2.3.4,5.6.7.8", "1.2.3.4-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ips, err := ParseSourceIPs(s)
		if err != nil {
			return
		}
		if len(ips) == 0 || len(ips) > MaxSourceIPs {
			t.Fatalf("ParseSourceIPs(%q) = %d addresses", s, len(ips))
		}
		seen := map[netip.Addr]bool{}
		for _, a := range ips {
			if !a.IsValid() || seen[a] {
				t.Fatalf("ParseSourceIPs(%q): invalid or duplicate %v", s, a)
			}
			seen[a] = true
		}
	})
}

func TestCheckSourceIPs(t *testing.T) {
	if err := CheckSourceIPs([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.77")}); err != nil {
		t.Errorf("CheckSourceIPs(loopback) = %v; want nil", err)
	}
	err := CheckSourceIPs([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("203.0.113.77")})
	if !errors.Is(err, ErrSourceIPs) || !strings.Contains(err.Error(), "203.0.113.77 is not an address of this host") {
		t.Errorf("CheckSourceIPs(foreign) = %v; want ErrSourceIPs naming 203.0.113.77", err)
	}
}

func TestReadLimits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	l, err := ReadLimits()
	if err != nil {
		t.Fatal(err)
	}
	if l.OpenFiles == 0 || l.FilesInUse <= 0 || l.Ports() <= 0 || l.SystemFilesMax == 0 {
		t.Errorf("ReadLimits() = %+v", l)
	}
	if !strings.Contains(l.String(), "local ports") {
		t.Errorf("String() = %q", l.String())
	}
}

// TestTimeWait makes sockets in TIME_WAIT (the client closes first) and
// counts them through netlink and /proc, which must agree.
func TestTimeWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				var b [1]byte
				c.Read(b[:]) // EOF when the client closes
				c.Close()
			}()
		}
	}()
	const n = 5
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	dst := ln.Addr().(*net.TCPAddr).AddrPort()
	other := ap("127.0.0.1:1")
	var got map[netip.AddrPort]int
	if err := testpeer.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		var err error
		if got, err = TimeWait([]netip.AddrPort{dst, other}); err != nil {
			t.Fatal(err)
		}
		return got[dst] >= n
	}); err != nil {
		t.Fatalf("TimeWait = %v; want >= %d for %v", got, n, dst)
	}
	viaNetlink := map[netip.AddrPort]int{dst: 0}
	if err := timeWaitNetlink(viaNetlink); err != nil {
		t.Fatalf("netlink: %v", err)
	}
	viaProc := map[netip.AddrPort]int{dst: 0}
	if err := timeWaitProc(viaProc); err != nil {
		t.Fatalf("proc: %v", err)
	}
	if viaNetlink[dst] < n || viaProc[dst] < n {
		t.Errorf("TIME_WAIT towards %v: netlink %d, /proc %d; want both >= %d", dst, viaNetlink[dst], viaProc[dst], n)
	}
}

func TestParseProcAddr(t *testing.T) {
	tests := map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
	}
	for in, want := range tests {
		got, ok := parseProcAddr(in)
		if !ok || got.String() != want {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	if _, ok := parseProcAddr("zz:1"); ok {
		t.Error("parseProcAddr(bad) ok")
	}
}

func TestHeadroom(t *testing.T) {
	dst := ap("127.0.0.1:80")
	l := Limits{OpenFiles: 20000, FilesInUse: 10, SystemFilesMax: -1, PortLow: 40000, PortHigh: 40999}
	tests := []struct {
		name string
		p    Plan
		tw   map[netip.AddrPort]int
		want int64
	}{
		{"ports", Plan{PerDestination: map[netip.AddrPort]int{dst: 0}}, nil, 500},
		{"ports with source IPs", Plan{PerDestination: map[netip.AddrPort]int{dst: 0}, SourceIPs: 60}, nil, 20000 - 10 - fdMargin},
		{"time wait", Plan{PerDestination: map[netip.AddrPort]int{dst: 0}}, map[netip.AddrPort]int{dst: 300}, 200},
		{"no destination", Plan{}, nil, 20000 - 10 - fdMargin},
	}
	for _, tt := range tests {
		if got := Headroom(l, tt.p, tt.tw); got != tt.want {
			t.Errorf("Headroom(%s) = %d; want %d", tt.name, got, tt.want)
		}
		// Check agrees: no warning at the headroom, a warning one above.
		p := tt.p
		p.Users = int(tt.want)
		if len(p.PerDestination) > 0 {
			p.PerDestination = map[netip.AddrPort]int{dst: p.Users}
		}
		for _, w := range Check(l, p, tt.tw) {
			if w.Kind != KindTimeWait {
				t.Errorf("%s: Check at the headroom warns %s", tt.name, w.Kind)
			}
		}
	}
	if h := Headroom(Limits{OpenFiles: -1, SystemFilesMax: -1}, Plan{}, nil); h != -1 {
		t.Errorf("Headroom(unknown) = %d; want -1", h)
	}
}

func TestTimeWaitTotal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if n, err := TimeWaitTotal(); err != nil || n < 0 {
		t.Errorf("TimeWaitTotal() = %d, %v", n, err)
	}
}
