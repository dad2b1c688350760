// Command zmq measures DEALER→ROUTER throughput (messages/s) of cicada's
// pure-Go ZMTP transport (protocol/zmtp) side by side with pyzmq/libzmq, in
// the same run, over loopback TCP. Each measurement runs the sender and the
// receiver as two processes:
//
//	cicada → cicada, pyzmq → pyzmq, pyzmq → cicada, cicada → pyzmq
//
// The receiver times from its first message to the last; every run is
// bounded in message count and in time. Run it through bench/zmq/run.sh.
//
// The -role router and -role dealer modes are the Go halves; pyzmq_bench.py
// is the Python half.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol/zmtp"
)

func main() {
	role := flag.String("role", "run", "run (orchestrate), router or dealer")
	endpoint := flag.String("endpoint", "tcp://127.0.0.1:0", "router: bind endpoint; dealer: connect endpoint")
	count := flag.Int("count", 100000, "messages to send/receive (router/dealer roles)")
	size := flag.Int("size", 1024, "frame size in bytes (dealer role)")
	timeout := flag.Duration("timeout", 20*time.Second, "bound of one measurement")
	python := flag.String("python", "/usr/bin/python3", "Python with pyzmq")
	pyScript := flag.String("pyscript", "", "path of pyzmq_bench.py (default: next to this program's source, bench/zmq)")
	count1k := flag.Int("count1k", 200000, "messages per run for 1 KB frames")
	count100k := flag.Int("count100k", 20000, "messages per run for 100 KB frames")
	repeat := flag.Int("repeat", 3, "measurements per pair; the median is printed")
	flag.Parse()

	var err error
	switch *role {
	case "router":
		err = runRouter(*endpoint, *count, *timeout)
	case "dealer":
		err = runDealer(*endpoint, *count, *size, *timeout)
	case "run":
		script := *pyScript
		if script == "" {
			script = filepath.Join("bench", "zmq", "pyzmq_bench.py")
		}
		err = orchestrate(*python, script, []run{{1024, *count1k}, {100 << 10, *count100k}}, *repeat, *timeout)
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zmq bench:", err)
		os.Exit(1)
	}
}

// runRouter receives count messages and prints "result N SECONDS".
func runRouter(endpoint string, count int, timeout time.Duration) error {
	r, err := zmtp.Listen(endpoint, zmtp.Options{Linger: -1})
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Printf("ready tcp://%s\n", r.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var start time.Time
	n := 0
	for n < count {
		_, _, err := r.Recv(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			return err
		}
		if n == 0 {
			start = time.Now()
		}
		n++
	}
	el := time.Since(start)
	if n == 0 {
		el = 0
	}
	fmt.Printf("result %d %.6f\n", n, el.Seconds())
	return nil
}

// runDealer sends count messages of size bytes, then waits for them to be
// written (Close with linger).
func runDealer(endpoint string, count, size int, timeout time.Duration) error {
	d, err := zmtp.Dial(endpoint, "bench-dealer", zmtp.Options{Linger: timeout})
	if err != nil {
		return err
	}
	payload := make([]byte, size)
	deadline := time.Now().Add(timeout)
	for i := 0; i < count && time.Now().Before(deadline); i++ {
		for {
			err := d.Send(payload)
			if err == nil {
				break
			}
			if !errors.Is(err, zmtp.ErrQueueFull) {
				return err
			}
			// Send never blocks; wait for the writer to drain the queue.
			time.Sleep(20 * time.Microsecond)
		}
	}
	return d.Close()
}

type run struct{ size, count int }

type impl struct {
	name string
	cmd  func(role, endpoint string, count, size int) *exec.Cmd
}

func orchestrate(python, script string, runs []run, repeat int, timeout time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("pyzmq script: %w", err)
	}
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	cicada := impl{"cicada", func(role, ep string, count, size int) *exec.Cmd {
		return exec.Command(self, "-role", role, "-endpoint", ep, "-count", fmt.Sprint(count),
			"-size", fmt.Sprint(size), "-timeout", timeout.String())
	}}
	pyzmq := impl{"pyzmq", func(role, ep string, count, size int) *exec.Cmd {
		return exec.Command(python, script, role, ep, fmt.Sprint(count), fmt.Sprint(size), secs)
	}}
	pairs := [][2]impl{{cicada, cicada}, {pyzmq, pyzmq}, {pyzmq, cicada}, {cicada, pyzmq}}
	fmt.Printf("%-18s %7s %9s %10s %8s   %s\n", "DEALER -> ROUTER", "frame", "messages", "msgs/s", "MB/s", "(median of runs; all runs msgs/s)")
	for _, rn := range runs {
		for _, p := range pairs {
			label := p[0].name + " -> " + p[1].name
			var rates []float64
			var n int
			var lastErr error
			for range max(repeat, 1) {
				got, secs, err := measure(p[0], p[1], rn, timeout)
				if err != nil {
					lastErr = err
					continue
				}
				n = got
				rates = append(rates, float64(got)/secs)
			}
			if len(rates) == 0 {
				fmt.Printf("%-18s %7s  error: %v\n", label, sizeLabel(rn.size), lastErr)
				continue
			}
			all := make([]string, len(rates))
			for i, r := range rates {
				all[i] = fmt.Sprintf("%.0f", r)
			}
			slices.Sort(rates)
			med := rates[len(rates)/2]
			fmt.Printf("%-18s %7s %9d %10.0f %8.1f   (%s)\n", label, sizeLabel(rn.size), n, med, med*float64(rn.size)/1e6, strings.Join(all, " "))
		}
	}
	return nil
}

func sizeLabel(n int) string { return fmt.Sprintf("%d KB", n>>10) }

// measure runs one receiver and one sender process and returns the
// receiver's count and seconds.
func measure(sender, receiver impl, rn run, timeout time.Duration) (int, float64, error) {
	recv := receiver.cmd("router", "tcp://127.0.0.1:0", rn.count, rn.size)
	recv.Stderr = os.Stderr
	out, err := recv.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := recv.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { recv.Process.Kill(); recv.Wait() }()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	wait := func() (string, error) {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", io.ErrUnexpectedEOF
			}
			return l, nil
		case <-time.After(timeout + 10*time.Second):
			return "", errors.New("receiver timed out")
		}
	}
	l, err := wait()
	if err != nil {
		return 0, 0, fmt.Errorf("receiver start: %w", err)
	}
	ep, ok := strings.CutPrefix(l, "ready ")
	if !ok {
		return 0, 0, fmt.Errorf("receiver said %q", l)
	}
	send := sender.cmd("dealer", ep, rn.count, rn.size)
	send.Stderr = os.Stderr
	if err := send.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { send.Process.Kill(); send.Wait() }()
	l, err = wait()
	if err != nil {
		return 0, 0, err
	}
	var n int
	var secs float64
	if _, err := fmt.Sscanf(l, "result %d %f", &n, &secs); err != nil {
		return 0, 0, fmt.Errorf("receiver said %q", l)
	}
	if n == 0 || secs <= 0 {
		return 0, 0, fmt.Errorf("received %d messages", n)
	}
	return n, secs, nil
}
