package worker

// Test helpers shared with the external test package (worker_test): real
// peers (nginx) and polling.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// RequirePeer returns the path of an external program, skipping the test
// when it is missing (failing under CI=true).
func RequirePeer(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", path, err)
		}
		t.Skipf("%s not installed: %v", path, err)
	}
	return path
}

func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// PollUntil polls cond every 50 ms until it holds or d passes.
func PollUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Nginx is a private nginx serving "hello" on a free 127.0.0.1 port.
type Nginx struct {
	Port      int
	accessLog string
}

func StartNginx(t testing.TB) *Nginx {
	t.Helper()
	bin := RequirePeer(t, "/usr/sbin/nginx")
	dir := t.TempDir()
	n := &Nginx{Port: FreePort(t), accessLog: filepath.Join(dir, "access.log")}
	conf := fmt.Sprintf(`worker_processes 1;
worker_rlimit_nofile 30000;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 30000; }
http {
  access_log %[2]s;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:%[3]d backlog=65535;
    location / { return 200 "hello\n"; }
  }
}
`, dir, n.accessLog, n.Port)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", cf, "-p", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	PollUntil(t, 10*time.Second, "nginx to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", n.Port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return n
}

func (n *Nginx) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.Port) }

func (n *Nginx) Requests(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(n.accessLog)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}
