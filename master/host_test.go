package master

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestCheckHost(t *testing.T) {
	tests := []struct {
		host string
		ok   bool
	}{
		{"", true},
		{"http://127.0.0.1:8080", true},
		{"https://example.com/base", true},
		{"http://[::1]:80", true},
		{"tcp://db:5432", true}, // Python workers' custom users
		{"127.0.0.1:8080", false},
		{"localhost:8080", false},
		{"example.com", false},
		{"//example.com", false},
		{"http://", false},
		{"/path", false},
	}
	for _, tt := range tests {
		err := CheckHost(tt.host)
		if (err == nil) != tt.ok {
			t.Errorf("CheckHost(%q) = %v; want ok %v", tt.host, err, tt.ok)
			continue
		}
		if err != nil && !errors.Is(err, ErrHostScheme) {
			t.Errorf("CheckHost(%q) = %v; not ErrHostScheme", tt.host, err)
		}
		if err != nil && !strings.Contains(tt.host, "://") && !strings.Contains(err.Error(), "add http://") {
			t.Errorf("CheckHost(%q) = %v; want it to say add http://", tt.host, err)
		}
	}
}

func TestNewAndStartRefuseHostWithoutScheme(t *testing.T) {
	o := testOptions(&logBuf{})
	o.Host = "127.0.0.1:8080"
	if _, err := New(o); !errors.Is(err, ErrHostScheme) || !errors.Is(err, ErrOptions) {
		t.Fatalf("New with host %q: %v; want ErrOptions and ErrHostScheme", o.Host, err)
	}
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	bad := "localhost:8089"
	if err := h.m.Start(1, 1, &bad); !errors.Is(err, ErrHostScheme) {
		t.Fatalf("Start with host %q: %v; want ErrHostScheme", bad, err)
	}
	if st := h.m.Status(); st.Host == bad {
		t.Errorf("the refused host became the test's host")
	}
}

func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"", "http://a", "a:1", "http://", "://x", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		err := CheckHost(host)
		if err != nil {
			if !errors.Is(err, ErrHostScheme) {
				t.Fatalf("CheckHost(%q) = %v; not ErrHostScheme", host, err)
			}
			return
		}
		if host == "" {
			return
		}
		u, perr := url.Parse(host)
		if perr != nil || u.Scheme == "" || u.Host == "" {
			t.Fatalf("CheckHost(%q) accepted a host without scheme or host name", host)
		}
	})
}
