package target

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestH2C serves the routes over h2c and HTTP/1.1 on one port.
func TestH2C(t *testing.T) {
	s := startServer(t, Options{H2C: true, Body: []byte("page\n")})
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Transport: &http.Transport{Protocols: &p},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	h1 := &http.Client{}
	tests := []struct {
		client             *http.Client
		method, path, body string
		proto              string
		status             int
		wantBody           string
	}{
		{h2, "GET", "/", "", "HTTP/2.0", 200, "page\n"},
		{h2, "GET", "/status/404", "", "HTTP/2.0", 404, "404 Not Found\n"},
		{h2, "GET", "/status/302", "", "HTTP/2.0", 302, "302 Found\n"},
		{h2, "POST", "/items", "12345", "HTTP/2.0", 200, "5\n"},
		{h2, "GET", "/delay/5", "", "HTTP/2.0", 200, "page\n"},
		{h2, "HEAD", "/", "", "HTTP/2.0", 200, ""},
		{h1, "GET", "/", "", "HTTP/1.1", 200, "page\n"},
		{h1, "POST", "/x", "abc", "HTTP/1.1", 200, "3\n"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, s.URL()+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tt.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Proto != tt.proto || resp.StatusCode != tt.status || string(b) != tt.wantBody {
			t.Errorf("%s %s over %s = %s %d %q; want %s %d %q", tt.method, tt.path, tt.proto, resp.Proto, resp.StatusCode, b, tt.proto, tt.status, tt.wantBody)
		}
		if tt.path == "/status/302" && resp.Header.Get("Location") != "/" {
			t.Errorf("302 over h2c: Location %q; want /", resp.Header.Get("Location"))
		}
	}
	h2.CloseIdleConnections()
	h1.CloseIdleConnections()
	waitFor(t, "both connections closed", func() bool { return s.Counters().ConnectionsOpen == 0 })
	if c := s.Counters(); c.Requests != int64(len(tests)) || c.ConnectionsAccepted != 2 {
		t.Errorf("counters = %+v; want %d requests on 2 connections", c, len(tests))
	}
}
