package web_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// TestListenReportsStartFailures checks that Listen returns every reason
// the web UI cannot start before anything is served, so that cmd can exit
// non-zero (issue 20 item 8).
func TestListenReportsStartFailures(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name    string
		opts    web.Options
		wantErr error  // nil: only the message is checked
		msg     string // part of the error text
	}{
		{"busy port", web.Options{Addr: busy.Addr().String()}, nil, "address already in use"},
		{"bad port", web.Options{Addr: "127.0.0.1:99999"}, nil, "invalid port"},
		{"missing certificate", web.Options{Addr: "127.0.0.1:0", TLSCert: missing, TLSKey: missing}, nil, "web: tls: open " + missing},
		{"certificate without key", web.Options{Addr: "127.0.0.1:0", TLSCert: missing}, web.ErrTLSPair, ""},
		{"key without certificate", web.Options{Addr: "127.0.0.1:0", TLSKey: missing}, web.ErrTLSPair, ""},
		{"bad credentials", web.Options{Addr: "127.0.0.1:0", Auth: "nocolon"}, web.ErrBadAuth, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := web.New(tt.opts, webtest.New(webtest.Options{})).Listen()
			if ln != nil {
				ln.Close()
			}
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Listen(%+v) = %v; want %v containing %q", tt.opts, err, tt.wantErr, tt.msg)
			}
		})
	}
}
