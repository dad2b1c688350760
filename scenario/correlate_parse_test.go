package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestCorrelationParseErrors: what the parser refuses in variables,
// captures, templates and checks, with the file, line and field.
func TestCorrelationParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"variable in name", "users: [{name: U, variables: {n: '1'}, tasks: [{path: /a, name: 'x${n}'}]}]",
			`t.yaml:1:65: users[0].tasks[0].name: "x${n}" reads a user variable, which this field cannot`},
		{"variable in method", "users: [{name: U, variables: {m: GET}, tasks: [{path: /a, method: '${m}'}]}]", "reads a user variable"},
		{"unknown generator", "users: [{name: U, variables: {n: {serial: 1}}, tasks: [{path: /a}]}]", `users[0].variables.n.serial: unknown generator "serial"`},
		{"two generators", "users: [{name: U, variables: {n: {uuid: true, now: unix}}, tasks: [{path: /a}]}]", "must be a string or one generator"},
		{"bad random_int", "users: [{name: U, variables: {n: {random_int: [5, 1]}}, tasks: [{path: /a}]}]", "must be at least 5"},
		{"bad each", "users: [{name: U, variables: {n: {random_int: [1, 2], each: task}}, tasks: [{path: /a}]}]", `users[0].variables.n.each: "task" is not request`},
		{"empty random_choice", "users: [{name: U, variables: {n: {random_choice: []}}, tasks: [{path: /a}]}]", "random_choice is a list of 1 to 10,000 values"},
		{"random_choice not a list", "users: [{name: U, variables: {n: {random_choice: a}}, tasks: [{path: /a}]}]", "random_choice is a list"},
		{"bad now", "users: [{name: U, variables: {n: {now: iso}}, tasks: [{path: /a}]}]", `"iso" is not unix, unix_ms or rfc3339`},
		{"uuid false", "users: [{name: U, variables: {n: {uuid: false}}, tasks: [{path: /a}]}]", "uuid: true is the only form"},
		{"bad variable name", "users: [{name: U, variables: {a-b: '1'}, tasks: [{path: /a}]}]", `"a-b" is not a variable name`},
		{"capture two sources", "users: [{name: U, tasks: [{path: /a, capture: {t: {json: $.a, header: X}}}]}]", "users[0].tasks[0].capture.t: a capture needs exactly one source"},
		{"capture no source", "users: [{name: U, tasks: [{path: /a, capture: {t: {default: x}}}]}]", "exactly one source"},
		{"capture bad path", "users: [{name: U, tasks: [{path: /a, capture: {t: {json: a.b}}}]}]", "capture.t.json: bad JSON path \"a.b\": must start with $"},
		{"capture bad regex", "users: [{name: U, tasks: [{path: /a, capture: {t: {regex: '('}}}]}]", "invalid regular expression"},
		{"capture two groups", "users: [{name: U, tasks: [{path: /a, capture: {t: {regex: '(a)(b)'}}}]}]", "has 2 groups"},
		{"capture unknown key", "users: [{name: U, tasks: [{path: /a, capture: {t: {xpath: //a}}}]}]", `unknown field "xpath"`},
		{"capture bad name", "users: [{name: U, tasks: [{path: /a, capture: {1t: {status: true}}}]}]", `"1t" is not a variable name`},
		{"check bad json path", "users: [{name: U, tasks: [{path: /a, checks: {json: {a: 1}}}]}]", "checks.json.a: bad JSON path"},
		{"check bad regex", "users: [{name: U, tasks: [{path: /a, checks: {regex: '['}}]}]", "checks.regex: invalid regular expression"},
		{"check unknown", "users: [{name: U, tasks: [{path: /a, checks: {xml: 1}}]}]", `unknown field "xml"`},
		{"unset env in path", "users: [{name: U, tasks: [{path: '/a/${token}'}]}]", "environment variable token is not set, nor is it a variable, capture or feed column"},
		{"feed column without feed", "users: [{name: U, tasks: [{path: '/a/${ids.id}'}]}]", "no feed of this user class has that column"},
		{"parallel with a capture", "http: {http2: true}\nusers: [{name: U, tasks: [{name: t, parallel: true, requests: [{path: /a, capture: {x: {status: true}}}, {path: /b}]}]}]",
			"users[0].tasks[0].parallel: a parallel task sends its requests at once: they cannot read or write the user's variables"},
		{"template in json key", "users: [{name: U, variables: {k: a}, tasks: [{path: /a, json: {'${k}': 1}}]}]", "reads a user variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Errorf("Parse = %v; want an ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

// TestFixedRequestsStayData: a class without variables, captures or
// extended checks keeps worker.RequestsFunc's requests as data, with no
// Dynamic reason; a templated path gets the template as its stats name.
func TestFixedRequestsStayData(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`
users:
  - name: Fixed
    tasks: [{path: /a, checks: {status: 200, body_contains: x}}]
  - name: Dyn
    on_start: [{path: /l, capture: {id: {json: $.id}}}]
    tasks: [{path: "/o/${id}"}, {path: /b}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	fixed, dyn := f.Scenario.Classes[0], f.Scenario.Classes[1]
	if r := fixed.Tasks[0].Requests[0]; r.Dynamic != "" || r.Expect == nil || len(r.Expect.BodyContains) != 1 {
		t.Errorf("fixed request = %+v", r)
	}
	if r := dyn.Tasks[0].Requests[0]; r.Dynamic == "" || r.HTTP.Name != "/o/${id}" {
		t.Errorf("templated request: Dynamic %q, name %q", r.Dynamic, r.HTTP.Name)
	}
	if r := dyn.Tasks[1].Requests[0]; r.Dynamic != "" {
		t.Errorf("a fixed request of a class with captures: Dynamic %q", r.Dynamic)
	}
	if len(dyn.OnStartRequests) != 1 || dyn.OnStartRequests[0].Dynamic == "" || dyn.OnStart == nil {
		t.Errorf("on_start with a capture: %+v", dyn.OnStartRequests)
	}
}

// TestJSONBodyTemplate: a json body with variables keeps its fixed parts
// as encoded JSON, escapes the values, and shows the templates in the
// request as data.
func TestJSONBodyTemplate(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`
users:
  - name: U
    variables: {a: x, b: y}
    tasks:
      - path: /
        json: {z: [1, "${a}"], m: {k: "p${b}q", n: null}, s: "<${NOPE:-d}>"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Scenario.Classes[0].Tasks[0].Requests[0]
	if want := `{"m":{"k":"p${b}q","n":null},"s":"\u003cd\u003e","z":[1,"${a}"]}`; string(r.HTTP.Body) != want {
		t.Errorf("body as data = %s; want %s", r.HTTP.Body, want)
	}
}
