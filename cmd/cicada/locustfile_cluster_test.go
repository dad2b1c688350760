package main

import (
	"context"
	encsv "encoding/csv"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// mixedLocustfile has two classes 3:1 with a fixed pace, so that each
// class's request count follows its user count. Within the subset the
// scenario package holds today (no captures).
const mixedLocustfile = `from locust import HttpUser, task, constant_pacing


class Browser(HttpUser):
    weight = 3
    wait_time = constant_pacing(0.25)

    def on_start(self):
        self.client.post("/login", json={"user": "u"})

    @task
    def browse(self):
        self.client.get("/browse?page=1", name="/browse")


class Buyer(HttpUser):
    weight = 1
    wait_time = constant_pacing(0.25)

    @task
    def buy(self):
        with self.client.post("/buy", data={"qty": "1"}, catch_response=True) as r:
            if r.status_code != 200:
                r.failure("not bought")
`

// TestMixedClusterOnLocustfile: a Python Locust master, one Python worker
// and one cicada worker, all on the same locustfile.py (issue #18). The
// target counts each path per client (the User-Agent tells python-requests
// from cicada): both workers run both classes, and each one's /browse to
// /buy counts follow the 3:1 users.
func TestMixedClusterOnLocustfile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Python master, a Python worker and a 6 s test")
	}
	var mu sync.Mutex
	counts := map[string]int{} // "python /browse" -> n
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := "cicada"
		if strings.HasPrefix(r.UserAgent(), "python-requests") {
			who = "python"
		}
		mu.Lock()
		counts[who+" "+r.URL.Path]++
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	port := testpeer.FreePort(t)
	csv := filepath.Join(dir, "mixed")
	lm := testpeer.StartLocust(t, testpeer.LocustConfig{Dir: dir, Locustfile: mixedLocustfile, Args: []string{
		"--master", "--headless", "--expect-workers", "2", "-u", "8", "-r", "8", "-t", "6s",
		"--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port), "-H", srv.URL, "--csv", csv,
	}})
	lf := filepath.Join(dir, "locustfile.py") // StartLocust wrote it
	// Debian's python3-locust has an empty __version__, which its own
	// master takes for a pre-2.0 worker: the Python worker runs Locust's
	// main with the version set (a test-bed workaround, not a protocol
	// change).
	pyWorker := testpeer.StartLocust(t, testpeer.LocustConfig{Bin: testpeer.PythonBin, Dir: t.TempDir(), Args: []string{
		"-c", "import sys, locust.runners; locust.runners.__version__ = '2.12.1'; from locust.main import main; sys.exit(main())",
		"-f", lf, "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port),
	}})
	var out, errb syncBuffer
	done := testpeer.Go(t, "the cicada worker", 60*time.Second, func(ctx context.Context) {
		if code := run([]string{"--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port), "-f", lf}, &out, &errb); code != 0 {
			t.Errorf("cicada worker exit code %d; log:\n%s", code, errb.String())
		}
	})
	if exited, _ := lm.Wait(60 * time.Second); !exited {
		t.Fatalf("the master did not end; log:\n%s", lm.Log())
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the cicada worker did not quit with the master; log:\n%s", errb.String())
	}
	_, _ = pyWorker.Wait(20 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("target counts: %v", counts)
	// Each Browser user logs in once: /login counts a worker's Browser
	// users; Locust's dispatcher gives each worker 4 of the 8 users. Every
	// (worker, class) with users sends at the same pace per user.
	if got := counts["python /login"] + counts["cicada /login"]; got != 6 {
		t.Errorf("%d Browser users logged in, want 6 (3:1 of 8 users)", got)
	}
	var perUser []float64
	for _, who := range []string{"python", "cicada"} {
		browsers := counts[who+" /login"]
		buyers := 4 - browsers
		if counts[who+" /browse"]+counts[who+" /buy"] == 0 {
			t.Errorf("the %s worker sent nothing", who)
		}
		if browsers > 0 {
			perUser = append(perUser, float64(counts[who+" /browse"])/float64(browsers))
		}
		if buyers > 0 {
			perUser = append(perUser, float64(counts[who+" /buy"])/float64(buyers))
		}
	}
	mean := 0.0
	for _, v := range perUser {
		mean += v / float64(len(perUser))
	}
	for _, v := range perUser {
		if math.Abs(v-mean) > 0.3*mean {
			t.Errorf("requests per user %.1f, mean %.1f over the workers and classes %v: not in proportion to the users", v, mean, perUser)
		}
	}
	browse := counts["python /browse"] + counts["cicada /browse"]
	buy := counts["python /buy"] + counts["cicada /buy"]
	if buy == 0 || math.Abs(float64(browse)/float64(buy)-3) > 0.75 {
		t.Errorf("/browse:/buy = %d:%d, want 3:1 as the users", browse, buy)
	}
	// The master's per-name counts add both workers' (Locust writes its
	// CSV before the last reports: allow a few requests of difference).
	f, err := os.Open(csv + "_stats.csv")
	if err != nil {
		t.Fatalf("the master's CSV: %v", err)
	}
	defer f.Close()
	rows, err := encsv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("the master's CSV: %v %v", rows, err)
	}
	master := map[string]int{}
	for _, r := range rows[1:] {
		master[r[1]], _ = strconv.Atoi(r[2])
	}
	for _, name := range []string{"/browse", "/buy"} {
		sum := counts["python "+name] + counts["cicada "+name]
		if m := master[name]; m == 0 || math.Abs(float64(m-sum)) > 0.1*float64(sum)+4 {
			t.Errorf("the master counts %d %s, the target %d", m, name, sum)
		}
	}
}
