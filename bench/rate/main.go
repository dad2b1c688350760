// Command rate measures arrival-rate accuracy (issue 13) side by side:
// cicada standalone, cicada master + 2 workers, vegeta -rate and k6
// constant-arrival-rate (when a k6 binary is given) against one HTTP
// server of its own on 127.0.0.1 that timestamps every arrival. For each
// requested rate it prints the achieved rate over the run (the first second
// left out) and the spread of the inter-arrival times seen by the server.
// Then the stall case: the server holds every response for -stall-for from
// -stall-after on; it prints the p99 each tool reports (cicada closed
// model: Locust's p99; cicada open model: the corrected p99; vegeta and
// k6: their own p99) and cicada's dropped iterations.
//
// Everything is bounded: each run by -duration (plus 30 s), the rates by
// -rates. Load goes to 127.0.0.1 only.
package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// server timestamps arrivals and can stall.
type server struct {
	mu       sync.Mutex
	arrivals []int64
	stallOn  atomic.Int64 // unix ns window
	stallOff atomic.Int64
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	if len(s.arrivals) < cap(s.arrivals) {
		s.arrivals = append(s.arrivals, now)
	}
	s.mu.Unlock()
	if on, off := s.stallOn.Load(), s.stallOff.Load(); now >= on && now < off {
		time.Sleep(time.Duration(off - now))
	}
	_, _ = w.Write([]byte("ok\n"))
}

func (s *server) reset(n int) {
	s.mu.Lock()
	s.arrivals = make([]int64, 0, n)
	s.mu.Unlock()
	s.stallOn.Store(0)
	s.stallOff.Store(0)
}

func (s *server) take() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.arrivals
	s.arrivals = nil
	return a
}

func analyse(arrivals []int64, start time.Time, d time.Duration) (achieved, mean, stdev, p99 float64) {
	lo := start.Add(time.Second).UnixNano()
	hi := start.Add(d).UnixNano()
	var in []int64
	for _, a := range arrivals {
		if a >= lo && a < hi {
			in = append(in, a)
		}
	}
	slices.Sort(in)
	if len(in) < 2 {
		return float64(len(in)) / (d - time.Second).Seconds(), 0, 0, 0
	}
	achieved = float64(len(in)) / (time.Duration(hi - lo)).Seconds()
	gaps := make([]float64, len(in)-1)
	var sum float64
	for i := 1; i < len(in); i++ {
		gaps[i-1] = float64(in[i]-in[i-1]) / 1e3
		sum += gaps[i-1]
	}
	mean = sum / float64(len(gaps))
	var sq float64
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	slices.Sort(gaps)
	return achieved, mean, math.Sqrt(sq / float64(len(gaps))), gaps[int(float64(len(gaps)-1)*0.99)]
}

type bench struct {
	cicada, vegeta, k6 string
	dir                string
	url                string
	srv                *server
	duration           time.Duration
	scenario           string
	port               int
}

func (b *bench) cmd(ctx context.Context, log string, name string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, name, args...)
	f, err := os.Create(filepath.Join(b.dir, log))
	if err == nil {
		c.Stdout, c.Stderr = f, f
	}
	c.WaitDelay = 5 * time.Second
	return c
}

func inFlight(rate float64) int { return int(rate/50) + 50 }

// cicadaRun runs cicada standalone (workers 0) or a master with workers
// cicada workers; extra are the load arguments.
func (b *bench) cicadaRun(name string, workers int, d time.Duration, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	prefix := filepath.Join(b.dir, name)
	args := append([]string{"-f", b.scenario, "--headless", "-t", strconv.Itoa(int(d.Seconds())) + "s", "-H", b.url,
		"--csv", prefix, "--only-summary", "--loglevel", "WARNING"}, extra...)
	if workers == 0 {
		return prefix, b.cmd(ctx, name+".log", b.cicada, args...).Run()
	}
	port := strconv.Itoa(b.port)
	m := b.cmd(ctx, name+".log", b.cicada, append(args, "--master", "--master-bind-host", "127.0.0.1",
		"--master-bind-port", port, "--expect-workers", strconv.Itoa(workers))...)
	if err := m.Start(); err != nil {
		return prefix, err
	}
	var ws []*exec.Cmd
	for i := range workers {
		w := b.cmd(ctx, fmt.Sprintf("%s-w%d.log", name, i), b.cicada, "-f", b.scenario, "--worker", "--master-host", "127.0.0.1", "--master-port", port)
		if err := w.Start(); err != nil {
			return prefix, err
		}
		ws = append(ws, w)
	}
	err := m.Wait()
	for _, w := range ws {
		_ = w.Wait()
	}
	return prefix, err
}

func (b *bench) vegetaRun(name string, rate float64, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	out := filepath.Join(b.dir, name+".bin")
	c := b.cmd(ctx, name+".log", b.vegeta, "attack", "-rate", fmt.Sprintf("%d/s", int(rate)), "-duration", d.String(),
		"-max-workers", strconv.Itoa(inFlight(rate)), "-output", out)
	c.Stdin = strings.NewReader("GET " + b.url + "/\n")
	if err := c.Run(); err != nil {
		return "", err
	}
	rep, err := exec.CommandContext(ctx, b.vegeta, "report", out).Output()
	return string(rep), err
}

func (b *bench) k6Run(name string, rate float64, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	script := filepath.Join(b.dir, name+".js")
	n := inFlight(rate)
	js := fmt.Sprintf(`import http from 'k6/http';
export const options = { summaryTrendStats: ['p(99)'], scenarios: { r: { executor: 'constant-arrival-rate',
  rate: %d, timeUnit: '1s', duration: '%s', preAllocatedVUs: %d, maxVUs: %d } } };
export default function () { http.get('%s/'); }
`, int(rate), d, n, n, b.url)
	if err := os.WriteFile(script, []byte(js), 0o600); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, b.k6, "run", "--quiet", script).CombinedOutput()
	return string(out), err
}

func csvRow(path, first string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil
	}
	for _, r := range rows[1:] {
		if r[0] == first {
			m := map[string]string{}
			for i, h := range rows[0] {
				m[h] = r[i]
			}
			return m
		}
	}
	return nil
}

var vegetaP99 = regexp.MustCompile(`Latencies\s+\[min, mean, 50, 90, 95, 99, max\]\s+([^\n]+)`)

func main() {
	var b bench
	rates := flag.String("rates", "1000,10000,50000", "requested rates, iterations (requests) per second")
	flag.StringVar(&b.cicada, "cicada", "bin/cicada", "cicada binary")
	flag.StringVar(&b.vegeta, "vegeta", "", "vegeta binary (empty: skipped)")
	flag.StringVar(&b.k6, "k6", "", "k6 binary (empty: skipped)")
	flag.DurationVar(&b.duration, "duration", 20*time.Second, "length of each run")
	stallRate := flag.Int("stall-rate", 200, "the stall case's rate")
	stallAfter := flag.Duration("stall-after", 4*time.Second, "the stall starts this long after each run starts")
	stallFor := flag.Duration("stall-for", 2*time.Second, "length of the stall")
	stallDuration := flag.Duration("stall-duration", 10*time.Second, "length of each stall-case run")
	flag.Parse()
	if err := run(&b, *rates, *stallRate, *stallAfter, *stallFor, *stallDuration); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rate:", err)
		os.Exit(1)
	}
}

func run(b *bench, rates string, stallRate int, stallAfter, stallFor, stallDuration time.Duration) error {
	if b.duration < 3*time.Second || b.duration > 5*time.Minute {
		return errors.New("-duration must be 3s..5m")
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "cicada-bench-rate"); err != nil {
		return err
	}
	b.scenario = filepath.Join(b.dir, "scenario.yaml")
	if err := os.WriteFile(b.scenario, []byte("users:\n  - name: RateUser\n    tasks:\n      - path: /\n"), 0o600); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b.srv = &server{}
	hs := &http.Server{Handler: b.srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	b.url = "http://" + ln.Addr().String()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b.port = pl.Addr().(*net.TCPAddr).Port
	pl.Close()

	fmt.Printf("bench/rate: %s per run (the first second left out), server on %s, logs in %s\n", b.duration, b.url, b.dir)
	fmt.Printf("%-24s %12s %12s %10s %12s %12s  %s\n", "tool", "requested/s", "achieved/s", "ratio", "gap stdev µs", "gap p99 µs", "note")
	for _, rs := range strings.Split(rates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(rs), 64)
		if err != nil || rate <= 0 || rate > 200_000 {
			return fmt.Errorf("-rates: %q", rs)
		}
		ideal := 1e6 / rate
		fmt.Printf("-- %g/s: ideal gap %.1f µs, in-flight cap %d\n", rate, ideal, inFlight(rate))
		tools := []struct {
			name string
			f    func() (string, error)
		}{
			{"cicada standalone", func() (string, error) {
				p, err := b.cicadaRun(fmt.Sprintf("sa-%g", rate), 0, b.duration, "--arrival-rate", fmt.Sprint(rate), "--max-in-flight", strconv.Itoa(inFlight(rate)))
				return dropNote(p), err
			}},
			{"cicada master+2 workers", func() (string, error) {
				p, err := b.cicadaRun(fmt.Sprintf("mw-%g", rate), 2, b.duration, "--arrival-rate", fmt.Sprint(rate), "--max-in-flight", strconv.Itoa(inFlight(rate)))
				return dropNote(p), err
			}},
			{"vegeta -rate", func() (string, error) {
				if b.vegeta == "" {
					return "", errSkip
				}
				_, err := b.vegetaRun(fmt.Sprintf("vegeta-%g", rate), rate, b.duration)
				return "", err
			}},
			{"k6 constant-arrival-rate", func() (string, error) {
				if b.k6 == "" {
					return "", errSkip
				}
				_, err := b.k6Run(fmt.Sprintf("k6-%g", rate), rate, b.duration)
				return "", err
			}},
		}
		for _, tl := range tools {
			b.srv.reset(int(rate*b.duration.Seconds()*1.5) + 1000)
			start := time.Now()
			note, err := tl.f()
			arr := b.srv.take()
			if errors.Is(err, errSkip) {
				fmt.Printf("%-24s %12g %12s %10s %12s %12s  %s\n", tl.name, rate, "-", "-", "-", "-", "not installed")
				continue
			}
			if err != nil {
				note = strings.TrimSpace(note + " error: " + err.Error())
			}
			// cicada's clock starts after its workers are ready: align on
			// the first arrival.
			if len(arr) > 0 {
				slices.Sort(arr)
				start = time.Unix(0, arr[0])
			}
			ach, _, sd, p99 := analyse(arr, start, b.duration)
			fmt.Printf("%-24s %12g %12.1f %10.3f %12.1f %12.1f  %s\n", tl.name, rate, ach, ach/rate, sd, p99, note)
		}
	}

	fmt.Printf("-- stall case: %d/s for %s, every response held from %s for %s; p99 as each tool reports it\n",
		stallRate, stallDuration, stallAfter, stallFor)
	stall := func() {
		b.srv.reset(stallRate*int(stallDuration.Seconds())*2 + 1000)
		on := time.Now().Add(stallAfter).UnixNano()
		b.srv.stallOn.Store(on)
		b.srv.stallOff.Store(on + int64(stallFor))
	}
	n := inFlight(float64(stallRate))
	stall()
	if p, err := b.cicadaRun("stall-closed", 0, stallDuration, "-u", strconv.Itoa(n), "-r", strconv.Itoa(n)); err == nil {
		r := csvRow(p+"_stats.csv", "")
		fmt.Printf("%-34s p99 %8s ms  (%s requests; Locust's p99; %d users, no wait)\n", "cicada closed model", r["99%"], r["Request Count"], n)
	} else {
		fmt.Printf("cicada closed model: %v\n", err)
	}
	stall()
	if p, err := b.cicadaRun("stall-open", 0, stallDuration, "--arrival-rate", strconv.Itoa(stallRate), "--max-in-flight", strconv.Itoa(n)); err == nil {
		r := csvRow(p+"_rate.csv", "")
		l := csvRow(p+"_stats.csv", "")
		fmt.Printf("%-34s p99 %8s ms  (corrected; service-time p99 %s ms; %s requests, %s dropped)\n", "cicada open model", r["Corrected 99%"], l["99%"], r["Request Count"], r["Dropped Iterations"])
	} else {
		fmt.Printf("cicada open model: %v\n", err)
	}
	if b.vegeta != "" {
		stall()
		rep, err := b.vegetaRun("stall-vegeta", float64(stallRate), stallDuration)
		m := vegetaP99.FindStringSubmatch(rep)
		if err != nil || m == nil {
			fmt.Printf("vegeta: %v\n%s\n", err, rep)
		} else {
			fmt.Printf("%-34s [min, mean, 50, 90, 95, 99, max] %s\n", "vegeta -rate", m[1])
		}
	} else {
		fmt.Println("vegeta: not installed")
	}
	if b.k6 != "" {
		stall()
		out, err := b.k6Run("stall-k6", float64(stallRate), stallDuration)
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if strings.Contains(sc.Text(), "http_req_duration") || strings.Contains(sc.Text(), "dropped_iterations") {
				fmt.Printf("%-34s %s\n", "k6", strings.TrimSpace(sc.Text()))
			}
		}
		if err != nil {
			fmt.Printf("k6: %v\n", err)
		}
	} else {
		fmt.Println("k6: not installed")
	}
	return nil
}

var errSkip = errors.New("skipped")

func dropNote(prefix string) string {
	r := csvRow(prefix+"_rate.csv", "")
	if r == nil {
		return "no rate CSV"
	}
	return "dropped " + r["Dropped Iterations"]
}
