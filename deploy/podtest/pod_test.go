package podtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// containersConf is the containers.conf of the test (see the package doc).
const containersConf = `[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
`

// hostNet is what the test must leave as it found it.
type hostNet struct {
	ipForward string
	nft       string
}

func readHostNet(t *testing.T) hostNet {
	t.Helper()
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatalf("read ip_forward: %v", err)
	}
	var h hostNet
	h.ipForward = strings.TrimSpace(string(fwd))
	if _, err := exec.LookPath("nft"); err == nil {
		out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list ruleset: %v: %s", err, out)
		}
		h.nft = string(out)
	} else {
		testpeer.Missing(t, "nft (apt-get install nftables)")
	}
	return h
}

// podman runs podman with the test's containers.conf and returns its stdout.
func podman(ctx context.Context, conf string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// logs returns a container's output, stdout and stderr together (cicada
// logs and prints its tables on stderr, as Locust does).
func logs(ctx context.Context, conf, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "podman", "logs", name)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("podman logs %s: %w", name, err)
	}
	return string(out), nil
}

// TestPodmanKubePlay is the image's end-to-end test (see the package doc).
func TestPodmanKubePlay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and runs a pod")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: rootful podman with host networking")
	}
	for _, p := range []string{"podman", "runc", "make"} {
		if _, err := exec.LookPath(p); err != nil {
			testpeer.Missing(t, "%s (apt-get install podman runc make)", p)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(root, "deploy/podman/cicada-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readHostNet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The image, under a tag of this test only.
	image := fmt.Sprintf("localhost/cicada-podtest-%d", os.Getpid())
	start := time.Now()
	mk := exec.CommandContext(ctx, "make", "-C", root, "image", "IMAGE="+image, "IMAGE_TOOL=podman", "VERSION=podtest")
	mk.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	built := time.Since(start)
	t.Cleanup(func() {
		if _, err := podman(context.Background(), conf, "rmi", "-f", image+":podtest", image+":latest"); err != nil {
			t.Errorf("remove the image: %v", err)
		}
	})
	label, err := podman(ctx, conf, "image", "inspect", "--format", `{{index .Labels "org.opencontainers.image.version"}} {{.Size}} {{.Config.User}}`, image+":podtest")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(label)
	if len(fields) != 3 || fields[0] != "podtest" || fields[2] != "65532:65532" {
		t.Fatalf("image version label, size, user = %q, want podtest <size> 65532:65532", label)
	}
	t.Logf("image %s: %s bytes, built in %v", image, fields[1], built.Round(time.Millisecond))

	// The shipped manifest on free ports, under a pod name of this test only.
	targetPort, masterPort := testpeer.FreePort(t), testpeer.FreePort(t)
	pod := fmt.Sprintf("cicada-podtest-%d", os.Getpid())
	m := strings.NewReplacer(
		"127.0.0.1:8080", "127.0.0.1:"+strconv.Itoa(targetPort),
		`"5557"`, strconv.Quote(strconv.Itoa(masterPort)),
		"localhost/cicada:latest", image+":podtest",
		"name: cicada\n", "name: "+pod+"\n",
		"name: cicada-scenario", "name: "+pod+"-scenario",
	).Replace(string(manifest))
	for _, want := range []string{strconv.Itoa(targetPort), strconv.Itoa(masterPort), image, pod + "\n"} {
		if strings.Count(m, want) == 0 {
			t.Fatalf("manifest rewrite lost %q: the shipped manifest changed shape", want)
		}
	}
	kube := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(kube, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := podman(context.Background(), conf, "kube", "down", kube); err != nil {
			t.Errorf("podman kube down: %v", err)
		}
		// kube down leaves the ConfigMap's volume (podman 4.3).
		if _, err := podman(context.Background(), conf, "volume", "rm", "-f", pod+"-scenario"); err != nil {
			t.Errorf("remove the scenario volume: %v", err)
		}
		after := readHostNet(t)
		if after.ipForward != before.ipForward {
			t.Errorf("net.ipv4.ip_forward went from %s to %s", before.ipForward, after.ipForward)
		}
		if after.nft != before.nft {
			t.Errorf("the host's nftables ruleset changed:\nbefore:\n%s\nafter:\n%s", before.nft, after.nft)
		}
	})
	if _, err := podman(ctx, conf, "kube", "play", kube); err != nil {
		t.Fatal(err)
	}

	// The master's exit code is the verdict.
	master := pod + "-master"
	var state string
	if err := testpeer.Poll(2*time.Minute, 500*time.Millisecond, func() bool {
		state, err = podman(ctx, conf, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", master)
		return err == nil && strings.HasPrefix(state, "exited")
	}); err != nil {
		out, _ := logs(context.Background(), conf, master)
		t.Fatalf("master did not exit: state %q, %v; logs:\n%s", state, err, out)
	}
	total := time.Since(start)
	stdout, err := logs(ctx, conf, master)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(state) != "exited 0" {
		t.Fatalf("master: %q, want exited 0; logs:\n%s", state, stdout)
	}
	requests, failures, err := finalCounts(stdout)
	if err != nil {
		t.Fatalf("%v; master logs:\n%s", err, stdout)
	}

	// The target still runs: ask it what it served.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/_cicada/stats", targetPort))
	if err != nil {
		t.Fatalf("target stats: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var served struct {
		Requests int64 `json:"requests"`
	}
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatalf("target stats %q: %v", body, err)
	}
	// The worker saw that it runs in a podman container (diag.ReadEnv).
	wlogs, err := logs(ctx, conf, pod+"-worker")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wlogs, "load generator environment: container, podman") {
		t.Errorf("the worker did not log its container environment:\n%s", wlogs)
	}
	// It had no file: it ran the scenario the master served (-f -).
	if !strings.Contains(stdout, "Sending scenario file /lotest/src/scenario.yaml") {
		t.Errorf("the master did not serve its scenario to the worker:\n%s", stdout)
	}
	t.Logf("make image to finished pod run: %v; master: %d requests, %d failures; target served %d",
		total.Round(time.Millisecond), requests, failures, served.Requests)
	if requests < 20 || failures != 0 || requests != served.Requests {
		t.Fatalf("master counted %d requests (%d failures), target served %d: want equal, > 20, no failures",
			requests, failures, served.Requests)
	}
}

// finalCounts reads the request and failure counts of the master's final
// stats table (Locust's console format, printed after "Shutting down"): the
// first "Aggregated" row after that line.
func finalCounts(logs string) (requests, failures int64, err error) {
	i := strings.LastIndex(logs, "Shutting down")
	if i < 0 {
		return 0, 0, fmt.Errorf("podtest: no \"Shutting down\" line in the master's logs")
	}
	for _, line := range strings.Split(logs[i:], "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "Aggregated" {
			continue
		}
		requests, err = strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("podtest: Aggregated row %q: %w", line, err)
		}
		fails, _, _ := strings.Cut(f[2], "(")
		failures, err = strconv.ParseInt(fails, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("podtest: Aggregated row %q: %w", line, err)
		}
		return requests, failures, nil
	}
	return 0, 0, fmt.Errorf("podtest: no Aggregated row after \"Shutting down\"")
}
