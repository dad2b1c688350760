package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestClassPicker runs cicada standalone with --class-picker (a child
// process) and its web UI: the dashboard offers the classes, a start that
// ticks B runs B's task only, an unknown class is refused, and without
// --class-picker a start that picks classes is refused, not ignored.
func TestClassPicker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short load test")
	}
	srv := startTarget(t)
	scen := writeScenario(t, `users:
  - {name: A, wait: constant(0.05), tasks: [{path: /a}]}
  - {name: B, wait: constant(0.05), tasks: [{path: /b}]}
`)
	for _, picker := range []bool{true, false} {
		t.Run(fmt.Sprintf("picker=%v", picker), func(t *testing.T) {
			webPort := freePort(t)
			args := []string{"--", "-f", scen, "-H", srv.URL(), "--web-host", "127.0.0.1", "--web-port", strconv.Itoa(webPort)}
			if picker {
				args = append(args, "--class-picker")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()}, args...)
			cmd.Dir = t.TempDir()
			var log testpeer.SyncBuffer
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				_ = cmd.Process.Signal(os.Interrupt)
				select {
				case <-exited:
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					t.Errorf("cicada did not exit after SIGINT; log:\n%s", log.String())
				}
			}()
			base := "http://127.0.0.1:" + strconv.Itoa(webPort)
			c := &http.Client{Timeout: 5 * time.Second}
			var page string
			if err := testpeer.Poll(20*time.Second, 50*time.Millisecond, func() bool {
				resp, err := c.Get(base + "/")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				page = string(b)
				return resp.StatusCode == 200
			}); err != nil {
				t.Fatalf("web UI never answered; log:\n%s", log.String())
			}
			if got := strings.Contains(page, `"available_user_classes":["A","B"]`) && strings.Contains(page, `"show_userclass_picker":true`); got != picker {
				t.Errorf("dashboard offers the class picker: %v; want %v", got, picker)
			}
			swarm := func(classes ...string) (bool, string) {
				form := url.Values{"user_count": {"4"}, "spawn_rate": {"4"}, "user_classes": classes}
				resp, err := c.PostForm(base+"/swarm", form)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body struct {
					Success bool   `json:"success"`
					Message string `json:"message"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&body)
				return body.Success, body.Message
			}
			if !picker {
				if ok, msg := swarm("B"); ok || !strings.Contains(msg, "--class-picker") {
					t.Errorf("start picking B without --class-picker: success %v, %q; want a refusal naming --class-picker", ok, msg)
				}
				return
			}
			if ok, msg := swarm("Nope"); ok || !strings.Contains(msg, "Nope") {
				t.Errorf("start picking an unknown class: success %v, %q; want a refusal naming it", ok, msg)
			}
			if ok, msg := swarm("B"); !ok {
				t.Fatalf("start picking B: %q", msg)
			}
			counts := func() (a, b int64) {
				resp, err := c.Get(base + "/stats/requests")
				if err != nil {
					return -1, -1
				}
				defer resp.Body.Close()
				var body struct {
					Stats []struct {
						Name        string `json:"name"`
						NumRequests int64  `json:"num_requests"`
					} `json:"stats"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&body)
				for _, s := range body.Stats {
					switch s.Name {
					case "/a":
						a = s.NumRequests
					case "/b":
						b = s.NumRequests
					}
				}
				return a, b
			}
			if err := testpeer.Poll(20*time.Second, 100*time.Millisecond, func() bool { _, b := counts(); return b >= 40 }); err != nil {
				t.Fatalf("B's task never ran 40 times; log:\n%s", log.String())
			}
			if a, _ := counts(); a != 0 {
				t.Errorf("A's task ran %d times; only B was picked", a)
			}
			// A running test's classes do not change; an edit without a
			// pick keeps them.
			if ok, msg := swarm("A"); ok || !strings.Contains(msg, "stop it first") {
				t.Errorf("picking A while B runs: success %v, %q; want a refusal", ok, msg)
			}
			if ok, msg := swarm(); !ok {
				t.Errorf("an edit without a pick: %q", msg)
			}
			_, b0 := counts()
			if err := testpeer.Poll(20*time.Second, 100*time.Millisecond, func() bool { _, b := counts(); return b >= b0+20 }); err != nil {
				t.Fatalf("B stopped running after the edit; log:\n%s", log.String())
			}
			if a, _ := counts(); a != 0 {
				t.Errorf("A's task ran %d times after the edit; only B was picked", a)
			}
		})
	}
}
