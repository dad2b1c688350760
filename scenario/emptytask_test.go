package scenario

import (
	"strings"
	"testing"
)

// TestEmptyTask: a named task may have an empty requests list (a
// locustfile's task that sends nothing, package locustfile); unnamed, it
// is refused.
func TestEmptyTask(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"named", "users:\n  - name: A\n    tasks:\n      - name: noop\n        requests: []\n      - path: /\n", ""},
		{"unnamed", "users:\n  - name: A\n    tasks:\n      - requests: []\n", "a task without requests needs a name"},
		{"empty on_start", "users:\n  - name: A\n    on_start: []\n    tasks: [{path: /}]\n", "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("e.yaml", []byte(tt.yaml), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tk := f.Scenario.Classes[0].Tasks[0]
			if tk.Name != "noop" || len(tk.Requests) != 0 || tk.Fn == nil {
				t.Errorf("task %+v", tk)
			}
		})
	}
}
