// Command socket measures cicada's WebSocket client beside a peer in one
// run (issue 16, item 5):
//
//   - memory: the resident memory per held idle connection, a WebSocket
//     (worker/sockc) beside a plain HTTP keep-alive connection
//     (worker/httpc), -n of each (default 15,000), each kind in a child
//     process of its own against a built-in target in another child (the
//     open-file limit is per process);
//   - users: with -cicada, the resident memory per held idle user of a
//     standalone `cicada --autostart` run, a websocket class beside the
//     seed scenario's HTTP keep-alive user (-n users against 1 user);
//   - speed: WebSocket echo exchanges per CPU second of the generator,
//     cicada's client beside k6's k6/ws (if -k6 names a k6 binary), -c
//     connections for -d each, against the same target.
//
// Everything goes to 127.0.0.1 and is bounded by -n, -c and -d.
//
//	go run ./bench/socket -n 15000 -k6 /path/to/k6
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker/httpc"
	"github.com/cicada-load/cicada/worker/sockc"
)

func main() {
	n := flag.Int("n", 15000, "held idle connections of each kind")
	conc := flag.Int("c", 50, "connections of the exchange round")
	dur := flag.Duration("d", 10*time.Second, "length of each exchange round")
	k6 := flag.String("k6", "", "k6 binary for the exchange round's peer (empty: cicada only)")
	cicada := flag.String("cicada", "", "cicada binary for the users round: RSS per held idle user of a standalone run (empty: skipped)")
	serve := flag.String("serve", "", "internal: run the target on this address")
	hold := flag.String("hold", "", "internal: hold -n connections of this kind (ws, http) to -url")
	exch := flag.Bool("exchange", false, "internal: run the exchange round against -url")
	url := flag.String("url", "", "internal: the target's URL")
	flag.Parse()
	var err error
	switch {
	case *serve != "":
		err = runServe(*serve)
	case *hold != "":
		err = runHold(*hold, *url, *n)
	case *exch:
		err = runExchange(*url, *conc, *dur)
	default:
		err = run(*n, *conc, *dur, *k6)
		if err == nil && *cicada != "" {
			err = runUsers(*cicada, *n)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/socket:", err)
		os.Exit(1)
	}
}

// run is the parent: it starts the children and prints the tables.
func run(n, conc int, dur time.Duration, k6 string) error {
	fmt.Printf("held idle connections: %d of each kind, one client process each (GOMAXPROCS %d)\n", n, runtime.GOMAXPROCS(0))
	fmt.Printf("%-28s %10s %14s %12s %12s\n", "kind", "held", "RSS growth", "KiB/conn", "heap B/conn")
	for _, kind := range []string{"http", "ws"} {
		out, err := withTarget(func(url string) (string, error) {
			return child("-hold", kind, "-url", url, "-n", strconv.Itoa(n))
		})
		if err != nil {
			return err
		}
		var held, rss, heap int64
		if _, err := fmt.Sscanf(out, "held %d rss %d heap %d", &held, &rss, &heap); err != nil {
			return fmt.Errorf("hold %s: %q: %w", kind, out, err)
		}
		name := map[string]string{"http": "HTTP/1.1 keep-alive (httpc)", "ws": "WebSocket (sockc)"}[kind]
		fmt.Printf("%-28s %10d %11.1f MB %12.2f %12d\n", name, held, float64(rss)/1e6, float64(rss)/1024/float64(held), heap/held)
	}
	fmt.Printf("\nWebSocket echo exchanges (send a 16-byte text message, wait for its echo), %d connections, %v each\n", conc, dur)
	fmt.Printf("%-28s %12s %12s %16s\n", "generator", "exchanges", "CPU s", "exchanges/CPU s")
	_, err := withTarget(func(url string) (string, error) {
		out, err := child("-exchange", "-url", url, "-c", strconv.Itoa(conc), "-d", dur.String())
		if err != nil {
			return "", err
		}
		var ex int64
		var cpu float64
		if _, err := fmt.Sscanf(out, "exchanges %d cpu %f", &ex, &cpu); err != nil {
			return "", fmt.Errorf("exchange: %q: %w", out, err)
		}
		fmt.Printf("%-28s %12d %12.2f %16.0f\n", "cicada (sockc)", ex, cpu, float64(ex)/cpu)
		if k6 == "" {
			fmt.Println("k6: not measured (no -k6 binary)")
			return "", nil
		}
		ex, cpu, err = runK6(k6, url, conc, dur)
		if err != nil {
			return "", err
		}
		fmt.Printf("%-28s %12d %12.2f %16.0f\n", "k6 (k6/ws)", ex, cpu, float64(ex)/cpu)
		return "", nil
	})
	return err
}

// withTarget runs fn with the URL of a target child process.
func withTarget(fn func(url string) (string, error)) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(self, "-serve", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the target did not listen on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fn("http://" + addr)
}

// child runs this program with args and returns its last output line.
func child(args ...string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %w", args, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

func runServe(addr string) error {
	srv, err := target.New(target.Options{Listen: addr})
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	return srv.Run(ctx)
}

func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signalNotify(ch)
	go func() { <-ch; cancel() }()
	return ctx, cancel
}

// rss returns the process's resident set size in bytes.
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func settle() (int64, int64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return rss(), int64(ms.HeapAlloc)
}

// runHold opens n connections of kind, one request or exchange each, and
// prints the memory growth while they are held idle.
func runHold(kind, url string, n int) error {
	ctx := context.Background()
	cfg, err := httpc.NewConfig(url, httpc.Options{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	wsURL := "ws" + strings.TrimPrefix(url, "http") + target.WSPath
	keep := make([]any, n)
	// Warm up the code paths and pools before the baseline.
	if err := open(ctx, kind, cfg, wsURL, &keep[0]); err != nil {
		return err
	}
	rss0, heap0 := settle()
	var next, failed atomic.Int64
	next.Store(1)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := open(ctx, kind, cfg, wsURL, &keep[i]); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d of %d %s connections failed, first: %v", f, n, kind, firstErr.Load())
	}
	time.Sleep(500 * time.Millisecond) // let the connects' goroutines exit
	rss1, heap1 := settle()
	fmt.Printf("held %d rss %d heap %d\n", n-1, rss1-rss0, heap1-heap0)
	runtime.KeepAlive(keep)
	return nil
}

var echoMsg = []byte("0123456789abcdef")

func open(ctx context.Context, kind string, cfg *httpc.Config, wsURL string, slot *any) error {
	switch kind {
	case "http":
		c := cfg.NewClient()
		resp := new(httpc.Response)
		if err := c.DoInto(ctx, &httpc.Request{Path: "/"}, resp); err != nil {
			return err
		}
		*slot = c
	case "ws":
		c, err := sockc.DialWS(ctx, wsURL, nil, &sockc.Options{Timeout: 30 * time.Second})
		if err != nil {
			return err
		}
		if err := c.Send(ctx, sockc.Text, echoMsg); err != nil {
			return err
		}
		if _, _, err := c.Recv(ctx, nil); err != nil {
			return err
		}
		*slot = c
	default:
		return errors.New("unknown kind " + kind)
	}
	return nil
}

// runExchange runs conc connections that exchange echo messages for d
// and prints the count and the process's CPU time.
func runExchange(url string, conc int, d time.Duration) error {
	wsURL := "ws" + strings.TrimPrefix(url, "http") + target.WSPath
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cpu0 := cpuSeconds()
	var total atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := sockc.DialWS(context.Background(), wsURL, nil, &sockc.Options{Timeout: 10 * time.Second})
			if err != nil {
				errc <- err
				return
			}
			defer c.Close(0, "", false)
			buf := make([]byte, 0, 64)
			n := int64(0)
			for ctx.Err() == nil {
				if err := c.Send(context.Background(), sockc.Text, echoMsg); err != nil {
					errc <- err
					break
				}
				if _, _, err := c.Recv(context.Background(), buf); err != nil {
					errc <- err
					break
				}
				n++
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	cpu := cpuSeconds() - cpu0
	select {
	case err := <-errc:
		return err
	default:
	}
	fmt.Printf("exchanges %d cpu %.3f\n", total.Load(), cpu)
	return nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

const k6Script = `
import ws from 'k6/ws';
export const options = { scenarios: { echo: { executor: 'per-vu-iterations', vus: __VUS__, iterations: 1, maxDuration: '__MAX__' } } };
export default function () {
  ws.connect('__URL__', null, function (socket) {
    socket.on('open', function () { socket.send('0123456789abcdef'); });
    socket.on('message', function () { socket.send('0123456789abcdef'); });
    socket.setTimeout(function () { socket.close(); }, __MS__);
  });
}
`

// runK6 runs the same exchange round with k6 and returns the messages
// k6 received and the CPU time of the k6 process.
func runK6(k6, url string, conc int, d time.Duration) (int64, float64, error) {
	dir, err := os.MkdirTemp("", "cicada-bench-socket-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	wsURL := "ws" + strings.TrimPrefix(url, "http") + target.WSPath
	s := strings.NewReplacer("__VUS__", strconv.Itoa(conc), "__MAX__", (d + 30*time.Second).String(),
		"__URL__", wsURL, "__MS__", strconv.FormatInt(d.Milliseconds(), 10)).Replace(k6Script)
	script := filepath.Join(dir, "ws.js")
	summary := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(script, []byte(s), 0o600); err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k6, "run", "--quiet", "--no-usage-report", "--summary-export", summary, script)
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("k6: %w: %s", err, out)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var cpu float64
	if ru != nil {
		cpu = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		return 0, 0, err
	}
	var sum struct {
		Metrics map[string]map[string]float64 `json:"metrics"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return 0, 0, fmt.Errorf("k6 summary: %w", err)
	}
	return int64(sum.Metrics["ws_msgs_received"]["count"]), cpu, nil
}

// The users round's scenarios: one exchange or request, then idle.
const (
	usersWS   = "users:\n  - name: W\n    kind: websocket\n    url: /ws\n    wait: constant(900)\n    tasks: [{steps: [{name: hello, send: hello, expect: {equals: hello}}]}]\n"
	usersHTTP = "users:\n  - name: H\n    wait: constant(900)\n    tasks: [{path: /}]\n"
)

// runUsers prints the RSS growth per held idle user of standalone cicada
// runs: n users against 1 user, for each scenario.
func runUsers(cicada string, n int) error {
	dir, err := os.MkdirTemp("", "cicada-bench-socket-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("\nheld idle users of a standalone cicada (%d users against 1, RSS of the cicada process)\n", n)
	fmt.Printf("%-28s %10s %14s %12s\n", "user", "held", "RSS growth", "KiB/user")
	for _, sc := range []struct{ name, text, row string }{
		{"HTTP keep-alive (seed)", usersHTTP, "/"}, {"WebSocket", usersWS, "hello"},
	} {
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte(sc.text), 0o600); err != nil {
			return err
		}
		var rs [2]int64
		for i, users := range []int{1, n} {
			_, err := withTarget(func(url string) (string, error) {
				r, err := usersRSS(cicada, path, url, users, sc.row)
				rs[i] = r
				return "", err
			})
			if err != nil {
				return err
			}
		}
		fmt.Printf("%-28s %10d %11.1f MB %12.2f\n", sc.name, n-1, float64(rs[1]-rs[0])/1e6, float64(rs[1]-rs[0])/1024/float64(n-1))
	}
	return nil
}

// usersRSS runs cicada standalone (--autostart: the web API answers) with users users until the stats show
// each user's first request (row), then returns its RSS and stops it.
func usersRSS(cicada, scenario, url string, users int, row string) (int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	webPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(cicada, "-f", scenario, "--autostart", "-u", strconv.Itoa(users), "-r", "2000", "-t", "6m",
		"-H", url, "--web-host", "127.0.0.1", "--web-port", strconv.Itoa(webPort), "--loglevel", "WARNING")
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		if requests(webPort, row) >= int64(users) {
			time.Sleep(2 * time.Second) // let the spawn's goroutines and buffers go
			b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
			if err != nil {
				return 0, err
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					return kb * 1024, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("%d users did not all reach %q within 4 minutes", users, row)
}

// requests returns the request count of the stats row named name, from
// the web API.
func requests(port int, name string) int64 {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/stats/requests")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var st struct {
		Stats []struct {
			Name        string `json:"name"`
			NumRequests int64  `json:"num_requests"`
		} `json:"stats"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return 0
	}
	for _, s := range st.Stats {
		if s.Name == name {
			return s.NumRequests
		}
	}
	return 0
}
