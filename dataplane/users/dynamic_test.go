package users

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/scenario"
)

// TestRefusesRuntimeValues: a scenario whose requests read or write the
// user's variables (templates, captures, feeds) or check the body is
// refused at load, naming the request and why; the same scenario with
// fixed requests is accepted.
func TestRefusesRuntimeValues(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ids.csv"), []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := "host: http://10.0.0.1\nhttp: {disable_cookies: true, max_redirects: 0}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"fixed", "users: [{name: U, tasks: [{path: /a, headers: {X: y}}]}]", ""},
		{"capture", "users: [{name: U, tasks: [{path: /a, capture: {t: {json: $.t}}}]}]", `class "U" task 0 ("/a") request 0: reads or writes user variables or checks the body (capture)`},
		{"templated header", "users: [{name: U, on_start: [{path: /l, capture: {t: {header: X}}}], tasks: [{path: /a, headers: {A: 'B ${t}'}}]}]", "on_start[0]: reads or writes"},
		{"variables", "users: [{name: U, variables: {n: {counter: true}}, tasks: [{path: '/a/${n}'}]}]", `path \"/a/${n}\"`},
		{"unused variables", "users: [{name: U, variables: {n: {uuid: true}}, tasks: [{path: /a}]}]", `user class \"U\" has variables or a feed`},
		{"feed", "feeds: [{name: ids, file: ids.csv}]\nusers: [{name: U, feed: ids, tasks: [{path: /a}]}]", "has variables or a feed"},
		{"json check", "users: [{name: U, tasks: [{path: /a, checks: {json: {$.ok: true}}}]}]", "checks beyond status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, []byte(head+tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := scenario.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := New(testOptions(pipeLinks), f.Scenario)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				_ = rt.Close()
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), strings.ReplaceAll(tc.want, `\"`, `"`)) {
				t.Errorf("New = %v; want ErrRefused containing %q", err, tc.want)
			}
			if err == nil {
				_ = rt.Close()
			}
		})
	}
}
