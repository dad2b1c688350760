package dpdk

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
)

func TestSplitArgs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"   \t\n", nil, false},
		{"-l 0", []string{"-l", "0"}, false},
		{"  -l   0-3  --vdev net_null0 ", []string{"-l", "0-3", "--vdev", "net_null0"}, false},
		{`--vdev 'net_af_packet0,iface=veth a'`, []string{"--vdev", "net_af_packet0,iface=veth a"}, false},
		{`--vdev "net_af_xdp0,iface=x" -a 0000:03:00.0`, []string{"--vdev", "net_af_xdp0,iface=x", "-a", "0000:03:00.0"}, false},
		{`a\ b c`, []string{"a b", "c"}, false},
		{`"a\"b\\c\d"`, []string{`a"b\c\d`}, false},
		{`'a\b'`, []string{`a\b`}, false},
		{`''`, []string{""}, false},
		{`x""y`, []string{"xy"}, false},
		{`'unterminated`, nil, true},
		{`"unterminated`, nil, true},
		{`trailing\`, nil, true},
	} {
		got, err := SplitArgs(c.in)
		if (err != nil) != c.err || (err != nil && !errors.Is(err, ErrArgs)) {
			t.Errorf("SplitArgs(%q) error %v; want error %v wrapping ErrArgs", c.in, err, c.err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("SplitArgs(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// FuzzSplitArgs: no panic; a result joined back with each argument
// single-quoted splits to itself.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{"-l 0 --vdev net_null0", `'a b' "c\"d" e\ f`, `"`, `\`, "a\tb\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := SplitArgs(s)
		if err != nil {
			if !errors.Is(err, ErrArgs) {
				t.Fatalf("SplitArgs(%q) = %v; want ErrArgs", s, err)
			}
			return
		}
		var b strings.Builder
		for _, a := range args {
			b.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		}
		again, err := SplitArgs(b.String())
		if err != nil || !slices.Equal(again, args) {
			t.Fatalf("SplitArgs(%q) = %q; requoted %q splits to %q, %v", s, args, b.String(), again, err)
		}
	})
}

func TestEALArgsDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		user []string
		want []string // the arguments after the user's
		err  bool
	}{
		{"nothing given", nil, []string{"-l", "3", "--in-memory", "--no-pci", "--no-telemetry"}, false},
		{"no hugepages", []string{"--no-huge"}, []string{"-l", "3", "--file-prefix", "cicada42", "--no-shconf", "--no-pci", "--no-telemetry"}, false},
		{"lcores, prefix, device, telemetry given", []string{"-l", "0-1", "--file-prefix=x", "-a", "0000:03:00.0", "--telemetry"}, nil, false},
		{"short forms attached", []string{"-c0x3", "--in-memory", "-a0000:03:00.0", "--no-telemetry"}, nil, false},
		{"lcores map, block list", []string{"--lcores=0@1", "-b", "0000:00:01.0"}, []string{"--in-memory", "--no-telemetry"}, false},
		{"--no-pci given", []string{"--no-pci"}, []string{"-l", "3", "--in-memory", "--no-telemetry"}, false},
		{"a longer option is not -l", []string{"--log-level", "*:debug"}, []string{"-l", "3", "--in-memory", "--no-pci", "--no-telemetry"}, false},
		{"secondary refused", []string{"--proc-type", "secondary"}, nil, true},
		{"secondary refused, = form", []string{"--proc-type=auto"}, nil, true},
		{"primary accepted", []string{"--proc-type=primary", "-l", "0", "--in-memory", "--no-pci", "--no-telemetry"}, nil, false},
	} {
		got, err := ealArgs(c.user, 3, 42)
		if c.err {
			if !errors.Is(err, link.ErrConfig) {
				t.Errorf("%s: ealArgs = %q, %v; want link.ErrConfig", c.name, got, err)
			}
			continue
		}
		want := append(append([]string{"cicada"}, c.user...), c.want...)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: ealArgs = %q, %v; want %q", c.name, got, err, want)
		}
	}
}

func TestConfigDefaultsAndRefusals(t *testing.T) {
	c, err := Config{Device: "net_af_packet0,iface=eth1"}.withDefaults()
	if err != nil || c.Port != "net_af_packet0" || c.RxRing != DefaultRxRing || c.TxRing != DefaultTxRing || c.Mbufs != DefaultMbufs {
		t.Errorf("withDefaults = %+v, %v; want port from the device name and default sizes", c, err)
	}
	for _, bad := range []Config{
		{},
		{Device: "net_null0", Port: "net_null1"},
		{Port: "0", RxRing: 16},
		{Port: "0", TxRing: 1 << 16},
		{Port: "0", Mbufs: 100},
		{Port: "0", IdleSleep: -time.Second},
	} {
		if _, err := bad.withDefaults(); !errors.Is(err, link.ErrConfig) {
			t.Errorf("withDefaults(%+v) = %v; want link.ErrConfig", bad, err)
		}
	}
}

func TestCheckCores(t *testing.T) {
	if err := CheckCores(1); err != nil {
		t.Errorf("CheckCores(1) = %v", err)
	}
	if err := CheckCores(2); !errors.Is(err, ErrOneCore) {
		t.Errorf("CheckCores(2) = %v; want ErrOneCore", err)
	}
	if err := CheckCores(0); !errors.Is(err, link.ErrConfig) {
		t.Errorf("CheckCores(0) = %v; want link.ErrConfig", err)
	}
}

// FuzzEALArgs: for any argument string, ealArgs either refuses (a
// secondary process, wrapping link.ErrConfig) or returns the program name,
// the caller's arguments unchanged and in order, then only defaults.
func FuzzEALArgs(f *testing.F) {
	for _, s := range []string{"", "-l 0-1 --in-memory", "--no-huge -a 0000:03:00.0", "--proc-type secondary", "-c0x3 --lcores=1@2 -b x"} {
		f.Add(s)
	}
	defaults := map[string]bool{"-l": true, "--in-memory": true, "--file-prefix": true, "--no-shconf": true, "--no-pci": true, "--no-telemetry": true}
	f.Fuzz(func(t *testing.T, s string) {
		user, err := SplitArgs(s)
		if err != nil {
			return
		}
		got, err := ealArgs(user, 1, 42)
		if err != nil {
			if !errors.Is(err, link.ErrConfig) || !strings.Contains(err.Error(), "--proc-type") {
				t.Fatalf("ealArgs(%q) = %v", user, err)
			}
			return
		}
		if len(got) < 1+len(user) || got[0] != "cicada" || !slices.Equal(got[1:1+len(user)], user) {
			t.Fatalf("ealArgs(%q) = %q; want cicada, the arguments, defaults", user, got)
		}
		for i := 1 + len(user); i < len(got); i++ {
			if a := got[i]; !defaults[a] && a != "1" && a != "cicada42" {
				t.Fatalf("ealArgs(%q) added %q", user, a)
			}
		}
	})
}

func TestParseIdleSleep(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{"0", 0, true},
		{"50us", 50 * time.Microsecond, true},
		{"1ms", time.Millisecond, true},
		{"10ms", MaxIdleSleep, true},
		{"11ms", 0, false},
		{"-1us", 0, false},
		{"50", 0, false},
		{"fast", 0, false},
	} {
		got, err := ParseIdleSleep(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseIdleSleep(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, link.ErrConfig) {
			t.Errorf("ParseIdleSleep(%q) error %v does not wrap link.ErrConfig", c.in, err)
		}
	}
}
