package scenario

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestTags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		want    [][]string // per task of the first class
		wantErr string     // substring of the error (field and line)
	}{
		{"task list", `
users:
  - name: U
    tasks:
      - path: /a
        tags: [login, smoke]
      - path: /b
`, [][]string{{"login", "smoke"}, nil}, ""},
		{"one tag as a scalar", `
users:
  - name: U
    tasks:
      - path: /a
        tags: smoke
`, [][]string{{"smoke"}}, ""},
		{"requests task", `
users:
  - name: U
    tasks:
      - name: flow
        tags: [flow, smoke, flow]
        requests:
          - path: /a
          - path: /b
`, [][]string{{"flow", "smoke"}}, ""},
		{"class tags on every task", `
users:
  - name: U
    tags: [shop]
    tasks:
      - path: /a
        tags: [smoke, shop]
      - path: /b
`, [][]string{{"smoke", "shop"}, {"shop"}}, ""},
		{"websocket task and class tags", `
host: http://127.0.0.1:8080
users:
  - name: U
    kind: websocket
    url: /ws
    tags: [ws]
    tasks:
      - name: chat
        tags: [chat]
        steps: [{send: hi}]
`, [][]string{{"chat", "ws"}}, ""},
		{"empty tag", `
users:
  - name: U
    tasks:
      - path: /a
        tags: [ok, ""]
`, nil, `t.yaml:6:20: users[0].tasks[0].tags[1]: tag "": must be non-empty`},
		{"tag with a comma", `
users:
  - name: U
    tasks:
      - path: /a
        tags: "a,b"
`, nil, `users[0].tasks[0].tags: tag "a,b"`},
		{"tags not a list of strings", `
users:
  - name: U
    tasks:
      - path: /a
        tags: {a: 1}
`, nil, `users[0].tasks[0].tags`},
		{"tags on a step", `
users:
  - name: U
    tasks:
      - name: flow
        requests:
          - path: /a
            tags: [x]
`, nil, `users[0].tasks[0].requests[0].tags`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(tc.yaml), nil)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want ErrInvalid containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, task := range f.Scenario.Classes[0].Tasks {
				got = append(got, task.Tags)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tags %q; want %q", got, tc.want)
			}
		})
	}
}
