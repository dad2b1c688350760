package target

import (
	"io"
	"net/http"
	"strconv"
	"testing"
)

func TestBytes(t *testing.T) {
	s := startServer(t, Options{})
	for _, tt := range []struct {
		path   string
		status int
		size   int
	}{
		{"/bytes/0", 200, 0},
		{"/bytes/1", 200, 1},
		{"/bytes/1024", 200, 1024},
		{"/bytes/65536", 200, 65536},
		{"/bytes/" + strconv.Itoa(MaxObjectSize), 200, MaxObjectSize},
		{"/bytes/" + strconv.Itoa(MaxObjectSize+1), 400, -1},
		{"/bytes/-1", 400, -1},
		{"/bytes/", 400, -1},
		{"/bytes/1k", 400, -1},
	} {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := http.Get(s.URL() + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tt.status {
				t.Fatalf("GET %s = %d, %v; want %d", tt.path, resp.StatusCode, err, tt.status)
			}
			if tt.size < 0 {
				return
			}
			if len(body) != tt.size || resp.ContentLength != int64(tt.size) || resp.Header.Get("Content-Type") != "application/octet-stream" {
				t.Fatalf("GET %s: %d bytes, Content-Length %d, %q", tt.path, len(body), resp.ContentLength, resp.Header.Get("Content-Type"))
			}
			for i, c := range body {
				if c != 'a'+byte(i%26) {
					t.Fatalf("byte %d = %q", i, c)
				}
			}
		})
	}
	if got := s.Counters().Requests; got != 9 {
		t.Errorf("Requests = %d; want 9", got)
	}
}
