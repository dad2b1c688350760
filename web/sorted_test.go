package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// checkSortedJSON fails t unless body is valid JSON whose object keys are in
// ascending order at every level, as Flask's sort_keys output is.
func checkSortedJSON(t *testing.T, body []byte) {
	t.Helper()
	if err := sortedJSONErr(body); err != nil {
		t.Errorf("%v in\n%s", err, body)
	}
}

func sortedJSONErr(body []byte) error {
	if !json.Valid(body) {
		return fmt.Errorf("invalid JSON")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	type frame struct {
		obj, wantKey, first bool
		lastKey             string
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k := tok.(string)
			if !top.first && k <= top.lastKey {
				return fmt.Errorf("key %q after %q: not sorted", k, top.lastKey)
			}
			top.lastKey, top.first, top.wantKey = k, false, false
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{obj: true, wantKey: true, first: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
		valueDone()
	}
}

func TestSortedJSONChecker(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"a": 1, "b": {"x": [1, {"p": 1, "q": 2}], "y": 2}, "c": []}`, true},
		{`{"b": 1, "a": 2}`, false},
		{`{"a": {"y": 1, "x": 2}}`, false},
		{`{"a": [{"k": 1, "j": 2}]}`, false},
		{`{"a": [], "b": {}, "c": null}`, true},
		{`{"a": 1, "a": 2}`, false},
	}
	for _, tt := range tests {
		if err := sortedJSONErr([]byte(tt.in)); (err == nil) != tt.ok {
			t.Errorf("sortedJSONErr(%s) = %v; want ok=%v", tt.in, err, tt.ok)
		}
	}
}
