package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/filelimit"
	"github.com/cicada-load/cicada/internal/timespan"
)

// TestTimespanSources checks that -t/--run-time and -s/--stop-timeout take
// internal/timespan's grammar and maximum from every source: the command
// line, LOCUST_* variables and config files (issue 20 item 10: "-t 5124096h"
// used to wrap to 1526 s and "99999999999h" to no limit), and that the
// options counting seconds (--autoquit, --expect-workers-max-wait) have the
// same maximum.
func TestTimespanSources(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		conf    string
		run     time.Duration
		stop    time.Duration
		wantErr error
	}{
		{name: "cli", args: []string{"-t", "1h20m", "-s", "30"}, run: 80 * time.Minute, stop: 30 * time.Second},
		{name: "cli long", args: []string{"--run-time=3h30m10s", "--stop-timeout=2m"}, run: 3*time.Hour + 30*time.Minute + 10*time.Second, stop: 2 * time.Minute},
		{name: "env", env: map[string]string{"LOCUST_RUN_TIME": "90s", "LOCUST_STOP_TIMEOUT": "1m"}, run: 90 * time.Second, stop: time.Minute},
		{name: "conf", conf: "run-time =  20m \nstop-timeout = 5s\n", run: 20 * time.Minute, stop: 5 * time.Second},
		{name: "maximum", args: []string{"-t", "876000h"}, run: timespan.Max},

		{name: "cli overflow", args: []string{"-t", "5124096h"}, wantErr: timespan.ErrTooLong},
		{name: "cli no limit overflow", args: []string{"-t", "99999999999h"}, wantErr: timespan.ErrTooLong},
		{name: "cli stop overflow", args: []string{"-s", "5124096h"}, wantErr: timespan.ErrTooLong},
		{name: "env overflow", env: map[string]string{"LOCUST_RUN_TIME": "9223372037"}, wantErr: timespan.ErrTooLong},
		{name: "env stop overflow", env: map[string]string{"LOCUST_STOP_TIMEOUT": "99999999999h"}, wantErr: timespan.ErrTooLong},
		{name: "conf overflow", conf: "run-time = 5124096h\n", wantErr: timespan.ErrTooLong},
		{name: "conf stop overflow", conf: "stop-timeout = 876001h\n", wantErr: timespan.ErrTooLong},

		{name: "cli spaced parts", args: []string{"-t", "1h 20m"}, wantErr: timespan.ErrInvalid},
		{name: "cli junk", args: []string{"-t", "10s junk"}, wantErr: timespan.ErrInvalid},
		{name: "cli order", args: []string{"-t", "1m1h"}, wantErr: timespan.ErrInvalid},
		{name: "cli leading blank", args: []string{"-t", " 30s"}, wantErr: timespan.ErrInvalid},
		{name: "cli negative", args: []string{"-s", "-5"}, wantErr: timespan.ErrInvalid},
		{name: "env junk", env: map[string]string{"LOCUST_RUN_TIME": "10s junk"}, wantErr: timespan.ErrInvalid},
		{name: "conf spaced parts", conf: "run-time = 1h 20m\n", wantErr: timespan.ErrInvalid},

		{name: "autoquit at maximum", args: []string{"--autostart", "--autoquit", "3153600000"}},
		{name: "autoquit overflow", args: []string{"--autostart", "--autoquit", "99999999999999"}, wantErr: timespan.ErrTooLong},
		{name: "autoquit above maximum", args: []string{"--autostart", "--autoquit", "3153600001"}, wantErr: timespan.ErrTooLong},
		{name: "max wait overflow", args: []string{"--expect-workers-max-wait", "9223372037"}, wantErr: timespan.ErrTooLong},
		{name: "max wait env overflow", env: map[string]string{"LOCUST_EXPECT_WORKERS_MAX_WAIT": "99999999999999"}, wantErr: timespan.ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseIn(t, tt.args, tt.env, tt.conf)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, ErrUsage) {
					t.Fatalf("Parse(%q, env %v, conf %q) = %v; want %v and ErrUsage", tt.args, tt.env, tt.conf, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q, env %v, conf %q) = %v", tt.args, tt.env, tt.conf, err)
			}
			if got := time.Duration(cfg.RunTime); got != tt.run {
				t.Errorf("RunTime = %v; want %v", got, tt.run)
			}
			if got := time.Duration(cfg.StopTimeout); got != tt.stop {
				t.Errorf("StopTimeout = %v; want %v", got, tt.stop)
			}
		})
	}
}

// TestPrecedence checks Locust's precedence (Locust 2.12.1
// locust/argument_parser.py: configargparse with DEFAULT_CONFIG_FILES,
// later files winning, and LOCUST_* variables): command line >
// environment > --config > ./locust.conf > ~/.locust.conf.
func TestPrecedence(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	extra := filepath.Join(work, "extra.conf")
	tests := []struct {
		name  string
		files map[string]string
		env   map[string]string
		args  []string
		want  int
	}{
		{"default", nil, nil, nil, 0},
		{"home", map[string]string{filepath.Join(home, ".locust.conf"): "users=3"}, nil, nil, 3},
		{"workdir beats home", map[string]string{filepath.Join(home, ".locust.conf"): "users=3", filepath.Join(work, "locust.conf"): "users = 2"}, nil, nil, 2},
		{"--config beats workdir", map[string]string{filepath.Join(work, "locust.conf"): "users: 2", extra: "users 6"}, nil, []string{"--config", extra}, 6},
		{"env beats files", map[string]string{extra: "users 6"}, map[string]string{"LOCUST_USERS": "4"}, []string{"--config", extra}, 4},
		{"cli beats env", map[string]string{extra: "users 6"}, map[string]string{"LOCUST_USERS": "4"}, []string{"--config", extra, "-u", "5"}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range []string{filepath.Join(home, ".locust.conf"), filepath.Join(work, "locust.conf"), extra} {
				os.Remove(p)
			}
			for p, text := range tt.files {
				write(p, text)
			}
			getenv := func(k string) string { return tt.env[k] }
			cfg, err := NewParser(io.Discard, getenv, home, work).Parse(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Users != tt.want {
				t.Errorf("Users = %d; want %d", cfg.Users, tt.want)
			}
		})
	}
}

func TestConfFileSyntax(t *testing.T) {
	conf := `# comment
; another
[section]
---
users = 2
headless = true
run-time = 1s
only-summary
host: http://127.0.0.1:26080
--spawn-rate 5
csv = "out/x"  # trailing comment
tags = [a, b]
`
	cfg, err := parseIn(t, nil, nil, conf)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Users != 2 || !cfg.Headless || time.Duration(cfg.RunTime) != time.Second || !cfg.OnlySummary ||
		cfg.Host != "http://127.0.0.1:26080" || cfg.SpawnRate != 5 || cfg.CSVPrefix != "out/x" ||
		len(cfg.Tags) != 2 || cfg.Tags[0] != "a" || cfg.Tags[1] != "b" {
		t.Errorf("parsed %+v", cfg)
	}
}

// parseIn parses args with env as the environment and conf, unless empty,
// as ./locust.conf, in fresh home and working directories.
func parseIn(t *testing.T, args []string, env map[string]string, conf string) (*Config, error) {
	t.Helper()
	work := t.TempDir()
	if conf != "" {
		if err := os.WriteFile(filepath.Join(work, "locust.conf"), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return NewParser(io.Discard, func(k string) string { return env[k] }, t.TempDir(), work).Parse(args)
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		conf string
	}{
		{"unknown flag", []string{"--nope"}, nil, ""},
		{"master and worker", []string{"--master", "--worker"}, nil, ""},
		{"full history without csv", []string{"--csv-full-history"}, nil, ""},
		{"autoquit without autostart", []string{"--autoquit", "5"}, nil, ""},
		{"bad web auth", []string{"--web-auth", "nocolon"}, nil, ""},
		{"bad loglevel", []string{"-L", "LOUD"}, nil, ""},
		{"bad run time", []string{"-t", "soon"}, nil, ""},
		{"bad bool env", nil, map[string]string{"LOCUST_HEADLESS": "maybe"}, ""},
		{"bad int env", nil, map[string]string{"LOCUST_USERS": "many"}, ""},
		{"unknown conf key", nil, nil, "frobnicate = 1"},
		{"missing --config", []string{"--config", "/nonexistent/cicada.conf"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseIn(t, tt.args, tt.env, tt.conf); !errors.Is(err, ErrUsage) {
				t.Errorf("Parse(%q) error = %v; want ErrUsage", tt.args, err)
			}
		})
	}
}

func TestEnvFalseLeavesFlagUnset(t *testing.T) {
	cfg, err := NewParser(io.Discard, func(k string) string {
		if k == "LOCUST_HEADLESS" {
			return "no"
		}
		return ""
	}, t.TempDir(), t.TempDir()).Parse(nil)
	if err != nil || cfg.Headless {
		t.Fatalf("Parse = %+v, %v; want headless false", cfg, err)
	}
}

func TestHeadfulCancelsHeadless(t *testing.T) {
	cfg, err := NewParser(io.Discard, func(k string) string {
		if k == "LOCUST_HEADLESS" {
			return "true"
		}
		return ""
	}, t.TempDir(), t.TempDir()).Parse([]string{"--headful"})
	if err != nil || cfg.Headless {
		t.Fatalf("Parse = %+v, %v; want headless false", cfg, err)
	}
}

func TestPositionalUserClasses(t *testing.T) {
	cfg, err := NewParser(io.Discard, func(string) string { return "" }, t.TempDir(), t.TempDir()).Parse([]string{"-u", "3", "WebUser", "ApiUser"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.UserClasses) != 2 || cfg.UserClasses[0] != "WebUser" || !cfg.UsersSet {
		t.Errorf("UserClasses = %v UsersSet=%v", cfg.UserClasses, cfg.UsersSet)
	}
}

// TestPortRange checks that every port option refuses a value outside
// 1-65535, from the command line, the environment or a config file, instead
// of binding a random port or the default (issue 20 item 12).
func TestPortRange(t *testing.T) {
	type opt struct{ flag, env string }
	opts := []opt{
		{"--web-port", "LOCUST_WEB_PORT"},
		{"--master-bind-port", "LOCUST_MASTER_BIND_PORT"},
		{"--master-port", "LOCUST_MASTER_NODE_PORT"},
	}
	tests := []struct {
		value string
		ok    bool
	}{
		{"-1", false},
		{"0", false},
		{"1", true},
		{"8089", true},
		{"65535", true},
		{"65536", false},
		{"99999", false},
	}
	for _, o := range opts {
		for _, tt := range tests {
			for _, src := range []string{"flag", "env", "conf"} {
				t.Run(o.flag+"="+tt.value+"/"+src, func(t *testing.T) {
					var args []string
					env := map[string]string{}
					conf := ""
					switch src {
					case "flag":
						args = []string{o.flag + "=" + tt.value}
					case "env":
						env[o.env] = tt.value
					case "conf":
						conf = o.flag[2:] + " = " + tt.value + "\n"
					}
					cfg, err := parseIn(t, args, env, conf)
					if tt.ok {
						if err != nil {
							t.Fatalf("Parse(%s %s) error = %v; want nil", o.flag, tt.value, err)
						}
						if got := map[string]int{"--web-port": cfg.WebPort, "--master-bind-port": cfg.MasterBindPort, "--master-port": cfg.MasterPort}[o.flag]; strconv.Itoa(got) != tt.value {
							t.Errorf("Parse(%s %s): port = %d; want %s", o.flag, tt.value, got, tt.value)
						}
						return
					}
					if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), o.flag) || !strings.Contains(err.Error(), "1-65535") {
						t.Errorf("Parse(%s %s) error = %v; want ErrUsage naming %s and 1-65535", o.flag, tt.value, err, o.flag)
					}
				})
			}
		}
	}
}

// TestConfFileLimits checks that a --config or locust.conf that is not a
// regular file or is larger than MaxConfFileSize is refused at once with
// ErrUsage (issue 20 item 11).
func TestConfFileLimits(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.conf")
	if err := os.WriteFile(big, []byte("headless = true\n#"+strings.Repeat("x", MaxConfFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	atLimit := filepath.Join(t.TempDir(), "limit.conf")
	line := "headless = true\n#"
	if err := os.WriteFile(atLimit, []byte(line+strings.Repeat("x", MaxConfFileSize-len(line)-1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr error
	}{
		{"at the limit", atLimit, nil},
		{"over the limit", big, filelimit.ErrTooLarge},
		{"dev zero", "/dev/zero", filelimit.ErrNotRegular},
		{"directory", t.TempDir(), filelimit.ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := NewParser(io.Discard, func(string) string { return "" }, t.TempDir(), t.TempDir()).Parse([]string{"--config", tt.path})
			if tt.wantErr == nil {
				if err != nil || !cfg.Headless {
					t.Fatalf("Parse(--config %s) = %+v, %v; want headless, nil", tt.path, cfg, err)
				}
				return
			}
			if !errors.Is(err, ErrUsage) || !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("Parse(--config %s) error = %v; want ErrUsage and %v naming the file", tt.path, err, tt.wantErr)
			}
		})
	}
	// ./locust.conf is optional, but one that exists and cannot be used
	// is an error, not skipped.
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "locust.conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := NewParser(io.Discard, func(string) string { return "" }, t.TempDir(), work).Parse(nil); !errors.Is(err, filelimit.ErrNotRegular) {
		t.Errorf("Parse with ./locust.conf a directory: error = %v; want ErrNotRegular", err)
	}
}

// TestMaxUsers: --max-users (CICADA_MAX_USERS, max-users in a config file)
// is 0 by default, takes a positive ceiling or -1 for none from every
// layer with the usual precedence, and refuses other negative values.
func TestMaxUsers(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		conf string
		want int64
	}{
		{"default", nil, nil, "", 0},
		{"flag", []string{"--max-users", "5000"}, nil, "", 5000},
		{"no ceiling", []string{"--max-users", "-1"}, nil, "", NoMaxUsers},
		{"no ceiling with =", []string{"--max-users=-1"}, nil, "", NoMaxUsers},
		{"env", nil, map[string]string{"CICADA_MAX_USERS": "200"}, "", 200},
		{"conf", nil, nil, "max-users = 300", 300},
		{"env over conf", nil, map[string]string{"CICADA_MAX_USERS": "200"}, "max-users = 300", 200},
		{"flag over env", []string{"--max-users", "7"}, map[string]string{"CICADA_MAX_USERS": "-1"}, "", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseIn(t, tt.args, tt.env, tt.conf)
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.args, err)
			}
			if cfg.MaxUsers != tt.want {
				t.Errorf("MaxUsers = %d; want %d", cfg.MaxUsers, tt.want)
			}
		})
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--max-users", "-2"}, nil},
		{[]string{"--max-users", "lots"}, nil},
		{nil, map[string]string{"CICADA_MAX_USERS": "-5"}},
	} {
		_, err := parseIn(t, bad.args, bad.env, "")
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--max-users") {
			t.Errorf("Parse(%q, env %v) error = %v; want ErrUsage naming --max-users", bad.args, bad.env, err)
		}
	}
}
