package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/worker/httpc"
)

type sample struct {
	method, name, failure string
	rt                    time.Duration
	length                int64
}

type capRecorder struct {
	mu sync.Mutex
	s  []sample
}

func (r *capRecorder) Record(method, name string, rt time.Duration, cl int64, failure string) {
	r.mu.Lock()
	r.s = append(r.s, sample{method, name, failure, rt, cl})
	r.mu.Unlock()
}

func (r *capRecorder) take() []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	r.s = nil
	return s
}

// testUser returns a user of a class with the given host, outside any pool
// scheduling, so a test can call its methods directly.
func testUser(t *testing.T, defHost, classHost string) (*User, *capRecorder, *env) {
	t.Helper()
	rec := &capRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{rec: rec, log: slog.New(slog.NewTextHandler(io.Discard, nil)), runCtx: ctx, defHost: defHost,
		httpOpts: HTTPOptions{Timeout: 5 * time.Second}}
	cc, err := compileClass(&UserClass{Name: "H", Host: classHost, Tasks: []Task{{Name: "t", Fn: noopTask}}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(e, []*compiledClass{cc})
	u := &User{p: p, class: p.classes["H"]}
	u.ctx, u.cancel = context.WithCancel(ctx)
	t.Cleanup(u.http.close)
	return u, rec, e
}

func TestUserDoRecordsLikeLocust(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "hello world")
		case "/slow":
			time.Sleep(60 * time.Millisecond)
			io.WriteString(w, "slow")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	u, rec, _ := testUser(t, srv.URL, "")
	ctx := context.Background()

	tests := []struct {
		name    string
		req     httpc.Request
		expect  *Expect
		failure string // "" = success; else a prefix
		length  int64
	}{
		{"ok", httpc.Request{Path: "/ok"}, nil, "", 11},
		{"404 fails by default", httpc.Request{Path: "/missing"}, nil, "HTTPError('404 Client Error: Not Found for url: " + srv.URL + "/missing')", 19},
		{"404 expected", httpc.Request{Path: "/missing", Name: "/missing-ok"}, &Expect{Status: []int{404}}, "", 19},
		{"wrong status", httpc.Request{Path: "/ok"}, &Expect{Status: []int{201, 202}}, "CatchResponseError('status 200, expected 201 or 202')", 11},
		{"body check", httpc.Request{Path: "/ok"}, &Expect{BodyContains: []string{"hello", "nope"}}, `CatchResponseError('response body does not contain "nope"')`, 11},
		{"slow", httpc.Request{Path: "/slow"}, &Expect{MaxResponseTime: 20 * time.Millisecond}, "CatchResponseError('response time ", 4},
		{"post", httpc.Request{Method: "POST", Path: "/ok", Body: []byte("x")}, nil, "", 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := u.Do(ctx, &tt.req, tt.expect)
			got := rec.take()
			if len(got) != 1 {
				t.Fatalf("%d samples recorded; want 1", len(got))
			}
			s := got[0]
			if tt.failure == "" {
				if err != nil || s.failure != "" {
					t.Fatalf("Do = %v, recorded failure %q; want success", err, s.failure)
				}
			} else if err == nil || !strings.HasPrefix(s.failure, tt.failure) || s.failure != err.Error() {
				t.Fatalf("Do = %v, recorded %q; want failure %q", err, s.failure, tt.failure)
			}
			wantMethod := tt.req.Method
			if wantMethod == "" {
				wantMethod = "GET"
			}
			if s.method != wantMethod || s.name != tt.req.StatsName() || s.length != tt.length || s.rt <= 0 {
				t.Fatalf("recorded %+v; want method %s name %s length %d", s, wantMethod, tt.req.StatsName(), tt.length)
			}
			if resp == nil || resp.StatusCode == 0 {
				t.Fatalf("no response returned")
			}
		})
	}

	// DoDiscard records the same way.
	if err := u.DoDiscard(ctx, &httpc.Request{Path: "/ok"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0].failure != "" || got[0].length != 11 {
		t.Fatalf("DoDiscard recorded %+v", got)
	}
}

func TestUserDoConnectionFailureAndStop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	u, rec, _ := testUser(t, "http://127.0.0.1:1", "")
	_, err := u.Do(context.Background(), &httpc.Request{Path: "/"}, nil)
	got := rec.take()
	if err == nil || len(got) != 1 || !strings.Contains(got[0].failure, "ConnectionRefusedError") {
		t.Fatalf("Do to a closed port = %v, recorded %+v; want a ConnectionRefusedError failure", err, got)
	}

	// A request interrupted by a forced stop is not a measurement.
	u2, rec2, _ := testUser(t, srv.URL, "")
	go func() { time.Sleep(50 * time.Millisecond); u2.cancel() }()
	if _, err := u2.Do(u2.ctx, &httpc.Request{Path: "/hang"}, nil); err == nil {
		t.Fatal("interrupted request succeeded")
	}
	if got := rec2.take(); len(got) != 0 {
		t.Fatalf("interrupted request recorded %+v; want nothing", got)
	}
}

func TestUserHostPrecedence(t *testing.T) {
	u, rec, _ := testUser(t, "", "")
	if _, err := u.HTTP(); !errors.Is(err, ErrNoHost) {
		t.Fatalf("HTTP() without any host = %v; want ErrNoHost", err)
	}
	if _, err := u.Do(context.Background(), &httpc.Request{Path: "/x"}, nil); !errors.Is(err, ErrNoHost) {
		t.Fatalf("Do without host = %v", err)
	}
	if got := rec.take(); len(got) != 1 || got[0].failure == "" {
		t.Fatalf("no-host failure recorded as %+v", got)
	}

	u, _, e := testUser(t, "http://scenario.test", "http://class.test")
	if got := u.Host(); got != "http://class.test" {
		t.Fatalf("Host() = %q; want the class host over the scenario's", got)
	}
	h := "http://master.test"
	e.masterHost.Store(&h)
	if got := u.Host(); got != h {
		t.Fatalf("Host() = %q; want the master's -H", got)
	}
	empty := ""
	e.masterHost.Store(&empty)
	if got := u.Host(); got != "http://class.test" {
		t.Fatalf("Host() with an empty master host = %q", got)
	}
}
