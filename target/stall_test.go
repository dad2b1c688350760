package target

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

func get(t *testing.T, url string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b), time.Since(start)
}

// TestStallControl: /_cicada/stall holds every request of the window
// until it ends, answers at once itself, and is not counted.
func TestStallControl(t *testing.T) {
	s := startServer(t, Options{})
	if _, d := get(t, s.URL()+"/"); d > 5*time.Second {
		t.Fatalf("GET / took %v before any stall", d)
	}
	body, _ := get(t, s.URL()+"/_cicada/stall?ms=1000")
	var window struct {
		From  int64 `json:"from_unix_ns"`
		Until int64 `json:"until_unix_ns"`
	}
	if err := json.Unmarshal([]byte(body), &window); err != nil || window.Until-window.From != int64(time.Second) {
		t.Fatalf("stall control answered %q (%v)", body, err)
	}
	var wg sync.WaitGroup
	for _, path := range []string{"/", "/status/503", "/delay/0"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := time.Now().UnixNano()
			get(t, s.URL()+path)
			if end := time.Now().UnixNano(); sent < window.Until && end < window.Until {
				t.Errorf("GET %s sent during the stall was answered %v before the window's end", path, time.Duration(window.Until-end))
			}
		}()
	}
	wg.Wait()
	if _, d := get(t, s.URL()+"/"); d > 900*time.Millisecond {
		t.Errorf("GET / after the stall took %v: the window should be over", d)
	}
	if got := s.Counters().Requests; got != 5 {
		t.Errorf("requests = %d, want 5 (the control is not counted)", got)
	}
	for _, bad := range []string{"", "?ms=", "?ms=x", "?ms=-1"} {
		resp, err := http.Get(s.URL() + "/_cicada/stall" + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("stall%s: status %d, want 400", bad, resp.StatusCode)
		}
	}
}

// TestStallOptions: the scripted window of StallAfter/StallFor holds a
// request sent inside it until the window's end.
func TestStallOptions(t *testing.T) {
	const after, length = 300 * time.Millisecond, 1500 * time.Millisecond
	s := startServer(t, Options{StallAfter: after, StallFor: length})
	if _, d := get(t, s.URL()+"/"); time.Since(s.start) >= after {
		t.Skipf("the first request took %v: too busy a machine to see the window", d)
	}
	waitFor(t, "the window to open", func() bool { return time.Since(s.start) > after })
	sent := time.Since(s.start)
	get(t, s.URL()+"/")
	if sent >= after+length {
		t.Skipf("the request went out %v after the start, past the window", sent)
	}
	if end := time.Since(s.start); end < after+length {
		t.Errorf("a request sent %v after the start was answered at %v, before the window's end (%v)", sent, end, after+length)
	}
}
