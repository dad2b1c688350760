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
	"runtime/pprof"
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
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (router/dealer roles)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "zmq bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

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
		pprof.StopCPUProfile()
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
	for i := 0; i < count; i++ {
		for {
			err := d.Send(payload)
			if err == nil {
				break
			}
			if !errors.Is(err, zmtp.ErrQueueFull) {
				d.Close()
				return err
			}
			if time.Now().After(deadline) {
				d.Close()
				return fmt.Errorf("sent %d of %d messages in %v", i, count, timeout)
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
	fmt.Println("msgs/s and MB/s: receiver's count over the time from its first to its last message.")
	fmt.Println("CPU: user+system CPU time of the whole sender / receiver process per message (includes start-up).")
	fmt.Printf("%-18s %6s %8s %9s %7s %11s %11s   %s\n", "DEALER -> ROUTER", "frame", "messages", "msgs/s", "MB/s", "send CPU", "recv CPU", "(msgs/s of each run)")
	for _, rn := range runs {
		for _, p := range pairs {
			label := p[0].name + " -> " + p[1].name
			var rates, sendCPU, recvCPU []float64
			var n int
			var lastErr error
			for range max(repeat, 1) {
				m, err := measure(p[0], p[1], rn, timeout)
				if err != nil {
					lastErr = err
					continue
				}
				n = m.n
				rates = append(rates, float64(m.n)/m.secs)
				sendCPU = append(sendCPU, m.sendCPU.Seconds()*1e6/float64(m.n))
				recvCPU = append(recvCPU, m.recvCPU.Seconds()*1e6/float64(m.n))
			}
			if len(rates) == 0 {
				fmt.Printf("%-18s %6s  error: %v\n", label, sizeLabel(rn.size), lastErr)
				continue
			}
			all := make([]string, len(rates))
			for i, r := range rates {
				all[i] = fmt.Sprintf("%.0f", r)
			}
			med := median(rates)
			fmt.Printf("%-18s %6s %8d %9.0f %7.1f %8.2f µs %8.2f µs   (%s)\n", label, sizeLabel(rn.size), n, med,
				med*float64(rn.size)/1e6, median(sendCPU), median(recvCPU), strings.Join(all, " "))
		}
	}
	return nil
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func sizeLabel(n int) string { return fmt.Sprintf("%d KB", n>>10) }

type measurement struct {
	n                int
	secs             float64
	sendCPU, recvCPU time.Duration
}

// measure runs one receiver and one sender process and returns the
// receiver's count and seconds, and the CPU time of both processes.
func measure(sender, receiver impl, rn run, timeout time.Duration) (measurement, error) {
	var m measurement
	recv := receiver.cmd("router", "tcp://127.0.0.1:0", rn.count, rn.size)
	recv.Stderr = os.Stderr
	out, err := recv.StdoutPipe()
	if err != nil {
		return m, err
	}
	if err := recv.Start(); err != nil {
		return m, err
	}
	recvDone := make(chan struct{})
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		recv.Wait()
		close(recvDone)
	}()
	defer func() { recv.Process.Kill(); <-recvDone }()
	bound := timeout + 10*time.Second
	wait := func() (string, error) {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", io.ErrUnexpectedEOF
			}
			return l, nil
		case <-time.After(bound):
			return "", errors.New("receiver timed out")
		}
	}
	l, err := wait()
	if err != nil {
		return m, fmt.Errorf("receiver start: %w", err)
	}
	ep, ok := strings.CutPrefix(l, "ready ")
	if !ok {
		return m, fmt.Errorf("receiver said %q", l)
	}
	send := sender.cmd("dealer", ep, rn.count, rn.size)
	send.Stderr = os.Stderr
	if err := send.Start(); err != nil {
		return m, err
	}
	sendDone := make(chan error, 1)
	go func() { sendDone <- send.Wait() }()
	defer func() { send.Process.Kill(); <-sendDone; sendDone <- nil }()
	l, err = wait()
	if err != nil {
		return m, err
	}
	if _, err := fmt.Sscanf(l, "result %d %f", &m.n, &m.secs); err != nil {
		return m, fmt.Errorf("receiver said %q", l)
	}
	if m.n == 0 || m.secs <= 0 {
		return m, fmt.Errorf("received %d messages", m.n)
	}
	// Both processes exit by themselves once done; their CPU time is then known.
	select {
	case <-recvDone:
	case <-time.After(bound):
		return m, errors.New("receiver did not exit")
	}
	select {
	case err := <-sendDone:
		sendDone <- err
	case <-time.After(bound):
		return m, errors.New("sender did not exit")
	}
	m.recvCPU = recv.ProcessState.UserTime() + recv.ProcessState.SystemTime()
	m.sendCPU = send.ProcessState.UserTime() + send.ProcessState.SystemTime()
	return m, nil
}
