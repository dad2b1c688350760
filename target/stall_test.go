package target

import (
	"io"
	"net/http"
	"strings"
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
	body, d := get(t, s.URL()+"/_cicada/stall?ms=400")
	if !strings.Contains(body, `"until_unix_ns"`) || d > 300*time.Millisecond {
		t.Fatalf("stall control answered %q after %v", body, d)
	}
	var wg sync.WaitGroup
	for _, path := range []string{"/", "/status/503", "/delay/0"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, d := get(t, s.URL()+path); d < 300*time.Millisecond {
				t.Errorf("GET %s during the stall took %v, want the rest of the 400 ms window", path, d)
			}
		}()
	}
	wg.Wait()
	if _, d := get(t, s.URL()+"/"); d > 300*time.Millisecond {
		t.Errorf("GET / after the stall took %v", d)
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

// TestStallOptions: the scripted window of StallAfter/StallFor.
func TestStallOptions(t *testing.T) {
	s := startServer(t, Options{StallAfter: 300 * time.Millisecond, StallFor: 500 * time.Millisecond})
	if _, d := get(t, s.URL()+"/"); d > 250*time.Millisecond {
		t.Skipf("the first request took %v: too busy a machine to see the window", d)
	}
	waitFor(t, "the window to open", func() bool { return time.Since(s.start) > 300*time.Millisecond })
	if _, d := get(t, s.URL()+"/"); d < 100*time.Millisecond || time.Since(s.start) < 800*time.Millisecond {
		t.Errorf("a request in the window took %v and ended %v after the start, want at the window's end (800ms)", d, time.Since(s.start))
	}
}
