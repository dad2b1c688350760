package httpc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// leanServer answers every request with a fixed response without
// allocating per request, so that allocation counts measure the client.
func leanServer(t testing.TB, resp string) string {
	t.Helper()
	srv := startRaw(t, func(c net.Conn) {
		buf := make([]byte, 16<<10)
		out := []byte(resp)
		state := 0 // bytes of "\r\n\r\n" matched
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			for _, b := range buf[:n] {
				switch {
				case b == "\r\n\r\n"[state]:
					state++
				case b == '\r':
					state = 1
				default:
					state = 0
				}
				if state == 4 {
					state = 0
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}
		}
	})
	return srv.URL()
}

// page128 is a 128-byte body, the size of the benchmark page.
var page128 = strings.Repeat("x", 128)

func benchResponse() string {
	return "HTTP/1.1 200 OK\r\nServer: lean\r\nContent-Type: text/html\r\nContent-Length: 128\r\n\r\n" + page128
}

func TestDoIntoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c := mustNew(t, leanServer(t, benchResponse()), Options{})
	req := &Request{Path: "/"}
	var resp Response
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancelable", ctx}} {
		for i := 0; i < 10; i++ { // warm buffers and pools
			if err := c.DoInto(tc.ctx, req, &resp); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(500, func() {
			if err := c.DoInto(tc.ctx, req, &resp); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 1 {
			t.Errorf("%s: DoInto allocates %.1f times per request; want <= 1", tc.name, allocs)
		}
		if len(resp.Body) != 128 {
			t.Fatalf("body %d bytes", len(resp.Body))
		}
	}
}

func BenchmarkDoInto(b *testing.B) {
	c := mustNew(b, leanServer(b, benchResponse()), Options{})
	req := &Request{Path: "/"}
	var resp Response
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(128)
	for b.Loop() {
		if err := c.DoInto(ctx, req, &resp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDo(b *testing.B) {
	c := mustNew(b, leanServer(b, benchResponse()), Options{})
	req := &Request{Path: "/", Headers: []Header{{"X-Bench", "1"}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(128)
	for b.Loop() {
		if _, err := c.Do(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoIntoParallel runs one Client per goroutine, as users do.
func BenchmarkDoIntoParallel(b *testing.B) {
	url := leanServer(b, benchResponse())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c, err := New(url, Options{})
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		req := &Request{Path: "/"}
		var resp Response
		for pb.Next() {
			if err := c.DoInto(context.Background(), req, &resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Idle memory: the server runs in a child process (this test binary
// re-executed), so that only the clients' memory is measured here.

func TestIdleClientMemory(t *testing.T) {
	if os.Getenv("HTTPC_SERVER_CHILD") == "1" {
		idleServerChild()
		return
	}
	n := 5000
	if testing.Short() {
		n = 1000
	}
	for _, shared := range []bool{true, false} {
		perClient, rss := measureIdleClients(t, n, shared)
		t.Logf("%d idle clients (shared Config %v): %.0f bytes of Go heap+stack per client, %.0f bytes RSS per client",
			n, shared, perClient, rss)
		if limit := 2048.0; !raceEnabled && perClient > limit {
			t.Errorf("an idle client (shared Config %v) costs %.0f bytes; want <= %.0f", shared, perClient, limit)
		}
	}
}

// BenchmarkIdleClients measures once, whatever -benchtime says.
func BenchmarkIdleClients(b *testing.B) {
	per, rss := measureIdleClients(b, 10000, true)
	for b.Loop() {
	}
	b.ReportMetric(per, "heap+stack-B/client")
	b.ReportMetric(rss, "RSS-B/client")
}

func measureIdleClients(t testing.TB, n int, shared bool) (perClient, rssPerClient float64) {
	t.Helper()
	cmd := testpeer.SelfCommand(context.Background(), "TestIdleClientMemory", []string{"HTTPC_SERVER_CHILD=1"})
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	addr, err := testpeer.ChildLine(sc, "ADDR=")
	if err != nil {
		t.Fatalf("server child did not start: %v", err)
	}
	go func() {
		for sc.Scan() {
		}
	}()

	clients := make([]*Client, n)
	var resp Response
	warm := mustNew(t, "http://"+addr, Options{})
	for i := 0; i < 10; i++ {
		if err := warm.DoInto(context.Background(), &Request{Path: "/"}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := NewConfig("http://"+addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, rssBefore := memNow()
	for i := range clients {
		c := cfg.NewClient()
		if !shared {
			if c, err = New("http://"+addr, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		clients[i] = c
	}
	after, rssAfter := memNow()
	for _, c := range clients {
		if c.Counters().Open != 1 {
			t.Fatal("client lost its connection")
		}
	}
	runtime.KeepAlive(clients)
	for _, c := range clients {
		c.Close()
	}
	return float64(after-before) / float64(n), float64(rssAfter-rssBefore) / float64(n)
}

func memNow() (heapStack uint64, rss uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			rss = pages * uint64(os.Getpagesize())
		}
	}
	return ms.HeapAlloc + ms.StackInuse, rss
}

//nolint:forbidigo // a child process: stdout is its channel to the parent test
func idleServerChild() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	fmt.Printf("ADDR=%s\n", ln.Addr())
	resp := []byte(benchResponse())
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute)
	ln.(*net.TCPListener).SetDeadline(deadline)
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetDeadline(deadline)
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
					c.Write(resp)
				}
			}
		}()
	}
	wg.Wait()
}
