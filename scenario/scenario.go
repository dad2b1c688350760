// Package scenario reads YAML scenario files: user classes with HTTP tasks
// that a cicada worker runs without compiling any code (a worker.Scenario),
// plus an optional load shape for the master (master.Stage, the one Stage
// type). It sits above both worker and master and feeds each its part.
//
// A scenario file looks like this (see examples/ for more):
//
//	host: ${TARGET:-http://127.0.0.1:8080}
//	users:
//	  - name: HelloWorldUser
//	    wait: constant(900)
//	    tasks:
//	      - path: /
//
// User classes of kind websocket or tcp have tasks of steps instead of
// requests (scenario/socket.go documents them).
//
// Every string value may use ${VAR} and ${VAR:-default} to read environment
// variables ($$ is a literal $); nothing else is expanded and no shell is
// involved. Unknown fields are errors. Errors name the file, line, column
// and field.
//
// A name declared in a user class by variables, a capture or a feed's
// columns is the user's variable instead: ${name} in a path, header value,
// body, JSON string or string check is read for each request at run time
// (templates are compiled at load; requests without any stay fixed data,
// sent without work per request). Captures read JSON paths, regular
// expressions, headers, cookies and the status; checks add JSON path
// equals/exists, regular expressions and headers. Feeds (CSV, JSON lines)
// give rows sequentially, at random, or once across the cluster (mode
// unique: the cicada master hands out row numbers, FeedBatch at a time;
// a Python Locust master cannot, and such users stop with a FEED
// failure). doc/scenario.md is the reference of every field.
//
// Deliberate differences from Locust: a templated path without a name is
// reported under the template (/orders/${id}), one row for all values.
//
// The http block's http2, streams and tls options and a task's parallel
// flag (issue 16) are described in tls.go; TLS files are read at load,
// relative to the scenario file's directory.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cicada-load/cicada/internal/filelimit"
	"github.com/cicada-load/cicada/internal/timespan"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/thresholds"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// ErrInvalid is wrapped by every error about the content of a scenario file.
var ErrInvalid = errors.New("scenario: invalid scenario")

// Error is a problem at one place of a scenario file.
type Error struct {
	File   string
	Line   int // 1-based; 0 if unknown
	Column int
	Field  string // path of the field, like users[0].tasks[1].method
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// File is a loaded scenario file.
type File struct {
	// Path is the file's name as given to Load or Parse.
	Path string
	// Scenario is ready for worker.New. Its classes carry the weight and
	// fixed_count a master's dispatcher needs.
	Scenario worker.Scenario
	// Stages is the optional load shape for a master (Options.Stages);
	// nil if none. Each SpawnRate is set (1 where the file gives none).
	Stages []master.Stage
	// Load is the optional arrival-rate form (rate.go); nil if none.
	Load *RateLoad
	// Thresholds are the pass/fail criteria of the thresholds: list
	// (thresholds.go), each with its file:line as Source.
	Thresholds []thresholds.Threshold
}

// MaxFileSize is the largest scenario file Load reads. Scenario files are
// written by hand: 4 MiB is about 180,000 tasks, which `cicada --list`
// parsed in 2.6 s with a peak RSS of 200 MB (16 MiB took 7 s and 680 MB;
// the YAML tree costs about 40 times the file's size).
const MaxFileSize = 4 << 20

// Load reads and parses the scenario file at path, expanding environment
// variables from the process environment. A path that is not a regular
// file (a directory, /dev/zero, a FIFO) or holds more than MaxFileSize
// bytes is refused with an error wrapping filelimit.ErrNotRegular or
// filelimit.ErrTooLarge.
func Load(path string) (*File, error) {
	data, err := filelimit.Read(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse parses a scenario. name is used in error messages; lookup resolves
// ${VAR} references (nil means no variables are set).
func Parse(name string, data []byte, lookup func(string) (string, bool)) (*File, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	p := &parser{file: name, lookup: lookup}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, p.yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: name, Msg: "empty scenario file"}
	}
	f, err := p.file_(doc.Content[0])
	if err != nil {
		return nil, err
	}
	f.Path = name
	return f, nil
}

type parser struct {
	file   string
	lookup func(string) (string, bool)
	feeds  map[string]*feed // the file's feeds by name
	cls    *classCtx        // the user class being read, if it has variables
	tls    *tlsBlock        // the http.tls block, if any (tls.go)
	par    []parallelAt     // the parallel: true of tasks, checked against http2
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) yamlError(err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: p.file, Line: line, Column: 1, Msg: "YAML syntax: " + m[2]}
	}
	return &Error{File: p.file, Msg: "YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	e := &Error{File: p.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// fields walks a mapping node, calling fn for every key; unknown keys are
// reported by fn returning errUnknown.
func (p *parser) fields(n *yaml.Node, path string, fn func(key string, v *yaml.Node, field string) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, path, "must be a mapping, not %s", kindName(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := k.Value
		if path != "" {
			field = path + "." + k.Value
		}
		if seen[k.Value] {
			return p.errf(k, field, "duplicate field")
		}
		seen[k.Value] = true
		if err := fn(k.Value, v, field); err != nil {
			if errors.Is(err, errUnknown) {
				return p.errf(k, field, "unknown field %q", k.Value)
			}
			return err
		}
	}
	return nil
}

var errUnknown = errors.New("unknown field")

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "a scalar (" + strconv.Quote(n.Value) + ")"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// str returns the expanded string value of a scalar.
func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, field, "must be a string, not %s", kindName(n))
	}
	s, err := p.expandStatic(n.Value)
	if err != nil {
		return "", p.errf(n, field, "%v", err)
	}
	return s, nil
}

func (p *parser) int_(n *yaml.Node, field string, min int) (int, error) {
	s, err := p.str(n, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, p.errf(n, field, "must be an integer, not %q", s)
	}
	if v < min {
		return 0, p.errf(n, field, "must be at least %d, not %d", min, v)
	}
	return v, nil
}

func (p *parser) float(n *yaml.Node, field string) (float64, error) {
	s, err := p.str(n, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, p.errf(n, field, "must be a non-negative number, not %q", s)
	}
	return v, nil
}

func (p *parser) bool_(n *yaml.Node, field string) (bool, error) {
	s, err := p.str(n, field)
	if err != nil {
		return false, err
	}
	v, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, p.errf(n, field, "must be true or false, not %q", s)
	}
	return v, nil
}

// duration reads a Go duration ("1.5s", "500ms") or a plain number of
// unit (seconds or milliseconds, as the field documents), at most
// timespan.Max.
func (p *parser) duration(n *yaml.Node, field string, unit time.Duration) (time.Duration, error) {
	s, err := p.str(n, field)
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, p.errf(n, field, "must not be negative")
		}
		if f*float64(unit) > float64(timespan.Max) {
			return 0, p.errf(n, field, "%s is above the maximum of %v (100 years)", s, timespan.Max)
		}
		return time.Duration(f * float64(unit)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, p.errf(n, field, "must be a duration like 1.5s or 500ms, not %q", s)
	}
	if d > timespan.Max {
		return 0, p.errf(n, field, "%s is above the maximum of %v (100 years)", s, timespan.Max)
	}
	return d, nil
}

// list calls fn for every item of a sequence node.
func (p *parser) list(n *yaml.Node, field string, fn func(i int, item *yaml.Node, field string) error) error {
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, field, "must be a list, not %s", kindName(n))
	}
	for i, item := range n.Content {
		if err := fn(i, item, fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

// strOrList reads a scalar or a list of scalars.
func (p *parser) strOrList(n *yaml.Node, field string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		s, err := p.str(n, field)
		return []string{s}, err
	}
	var out []string
	err := p.list(n, field, func(_ int, item *yaml.Node, f string) error {
		s, err := p.str(item, f)
		out = append(out, s)
		return err
	})
	return out, err
}

func (p *parser) file_(root *yaml.Node) (*File, error) {
	f := &File{}
	var usersNode *yaml.Node
	err := p.fields(root, "", func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "host":
			f.Scenario.Host, err = p.str(v, field)
		case "http":
			err = p.httpOptions(v, field, &f.Scenario.HTTP)
			if err == nil {
				err = p.checkProtocols(v, &f.Scenario.HTTP, p.tls)
			}
		case "users":
			usersNode = v
		case "stages":
			f.Stages, err = p.stages(v, field)
		case "feeds":
			err = p.feedList(v, field)
		case "load":
			f.Load, err = p.load(v, field)
		case "thresholds":
			f.Thresholds, err = p.thresholds(v, field)
		default:
			return errUnknown
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if usersNode == nil {
		return nil, p.errf(root, "users", "missing: a scenario needs at least one user class")
	}
	if f.Load != nil && f.Stages != nil {
		return nil, p.errf(root, "load", "cannot be combined with stages (a user load shape)")
	}
	names := map[string]bool{}
	err = p.list(usersNode, "users", func(i int, item *yaml.Node, field string) error {
		uc, err := p.userClass(item, field)
		if err != nil {
			return err
		}
		if names[uc.Name] {
			return p.errf(item, field+".name", "duplicate user class %q", uc.Name)
		}
		names[uc.Name] = true
		f.Scenario.Classes = append(f.Scenario.Classes, uc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(f.Scenario.Classes) == 0 {
		return nil, p.errf(usersNode, "users", "needs at least one user class")
	}
	if len(p.par) > 0 && !f.Scenario.HTTP.HTTP2 {
		return nil, p.errf(p.par[0].n, p.par[0].field, "%v", errParallel)
	}
	return f, nil
}

func (p *parser) httpOptions(n *yaml.Node, path string, o *httpc.Options) error {
	return p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "timeout":
			o.Timeout, err = p.duration(v, field, time.Second)
		case "connect_timeout":
			o.ConnectTimeout, err = p.duration(v, field, time.Second)
		case "insecure":
			o.InsecureSkipVerify, err = p.bool_(v, field)
		case "user_agent":
			o.UserAgent, err = p.str(v, field)
		case "headers":
			o.Headers, err = p.headers(v, field)
		case "disable_cookies":
			o.DisableCookies, err = p.bool_(v, field)
		case "disable_compression":
			o.DisableCompression, err = p.bool_(v, field)
		case "http2":
			o.HTTP2, err = p.bool_(v, field)
		case "streams":
			o.HTTP2Streams, err = p.int_(v, field, 1)
		case "tls":
			p.tls, err = p.tlsOptions(v, field, &o.TLS)
		case "max_redirects":
			var n int
			n, err = p.int_(v, field, -1)
			if n == 0 {
				n = -1 // "max_redirects: 0" means: do not follow
			}
			o.MaxRedirects = n
		default:
			return errUnknown
		}
		return err
	})
}

func (p *parser) headers(n *yaml.Node, path string) ([]httpc.Header, error) {
	var hs []httpc.Header
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		val, err := p.str(v, field)
		if err != nil {
			return err
		}
		k, err := expand(key, p.lookup)
		if err != nil {
			return p.errf(v, field, "%v", err)
		}
		hs = append(hs, httpc.Header{Key: k, Value: val})
		return nil
	})
	return hs, err
}

func (p *parser) stages(n *yaml.Node, path string) ([]master.Stage, error) {
	var out []master.Stage
	err := p.list(n, path, func(i int, item *yaml.Node, field string) error {
		var s master.Stage
		var haveD, haveU bool
		err := p.fields(item, field, func(key string, v *yaml.Node, f string) error {
			var err error
			switch key {
			case "duration":
				s.Duration, err = p.duration(v, f, time.Second)
				haveD = true
			case "users":
				s.Users, err = p.int_(v, f, 0)
				haveU = true
			case "spawn_rate":
				s.SpawnRate, err = p.float(v, f)
			default:
				return errUnknown
			}
			return err
		})
		if err != nil {
			return err
		}
		if !haveD || !haveU {
			return p.errf(item, field, "a stage needs duration and users")
		}
		if s.SpawnRate == 0 {
			s.SpawnRate = 1
		}
		if i > 0 && s.Duration <= out[i-1].Duration {
			return p.errf(item, field+".duration",
				"must be larger than the previous stage's (%v): durations are cumulative, the time since the start when the stage ends, as in Locust's StagesShape",
				out[i-1].Duration)
		}
		out = append(out, s)
		return nil
	})
	if err == nil && len(out) == 0 {
		return nil, p.errf(n, path, "is empty")
	}
	return out, err
}

func (p *parser) userClass(n *yaml.Node, path string) (worker.UserClass, error) {
	var uc worker.UserClass
	var tasksNode, nameNode *yaml.Node
	var onStart, onStop []*request
	var classTags []string
	var sock socketClass // kind, url, headers (socket.go)
	cc, err := p.classContext(n, path)
	if err != nil {
		return uc, err
	}
	p.cls = cc
	defer func() { p.cls = nil }()
	err = p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "variables", "feed":
			// read by classContext
		case "kind", "url", "headers":
			err = p.socketClassField(&sock, key, v, field)
		case "name":
			nameNode = v
			uc.Name, err = p.str(v, field)
		case "weight":
			uc.Weight, err = p.int_(v, field, 0)
		case "fixed_count":
			uc.FixedCount, err = p.int_(v, field, 0)
		case "host":
			uc.Host, err = p.str(v, field)
		case "wait":
			uc.WaitSpec, err = p.wait(v, field)
			if err == nil {
				uc.Wait = uc.WaitSpec.WaitTime()
			}
		case "sequential":
			uc.Sequential, err = p.bool_(v, field)
		case "tags":
			classTags, err = p.tags(v, field)
		case "tasks":
			tasksNode = v
		case "on_start":
			onStart, err = p.requests(v, field)
		case "on_stop":
			onStop, err = p.requests(v, field)
		default:
			return errUnknown
		}
		return err
	})
	if err != nil {
		return uc, err
	}
	if nameNode == nil || uc.Name == "" {
		return uc, p.errf(n, path+".name", "missing: a user class needs a name")
	}
	if tasksNode == nil {
		return uc, p.errf(n, path+".tasks", "missing: a user class needs at least one task")
	}
	if err := p.checkSocketClass(&sock, n, path); err != nil {
		return uc, err
	}
	err = p.list(tasksNode, path+".tasks", func(i int, item *yaml.Node, field string) error {
		before := len(cc.tasks)
		t, err := p.classTask(&sock, item, field)
		t.Tags = mergeTags(classTags, t.Tags)
		if len(cc.tasks) == before {
			cc.tasks = append(cc.tasks, nil) // not HTTP requests (a socket task)
		}
		uc.Tasks = append(uc.Tasks, t)
		return err
	})
	if err != nil {
		return uc, err
	}
	if len(uc.Tasks) == 0 {
		return uc, p.errf(tasksNode, path+".tasks", "needs at least one task")
	}
	if classRuntime(&uc, cc, onStart, onStop) { // correlate.go
		return uc, nil
	}
	if onStart != nil {
		uc.OnStartRequests = asRequests(onStart)
		uc.OnStart = worker.RequestsFunc(uc.OnStartRequests)
	}
	if onStop != nil {
		uc.OnStopRequests = asRequests(onStop)
		uc.OnStop = worker.RequestsFunc(uc.OnStopRequests)
	}
	return uc, nil
}

var waitRe = regexp.MustCompile(`^\s*(constant|between|constant_pacing|constant_throughput)\s*\(\s*([^,()]*?)\s*(?:,\s*([^,()]*?)\s*)?\)\s*$`)

// wait parses Locust's wait time functions: constant(s), between(a, b),
// constant_pacing(s), constant_throughput(tasks_per_second).
func (p *parser) wait(n *yaml.Node, field string) (*worker.WaitSpec, error) {
	s, err := p.str(n, field)
	if err != nil {
		return nil, err
	}
	m := waitRe.FindStringSubmatch(s)
	bad := func() (*worker.WaitSpec, error) {
		return nil, p.errf(n, field, "%q is not one of constant(s), between(min, max), constant_pacing(s), constant_throughput(per_second)", s)
	}
	if m == nil {
		return bad()
	}
	num := func(x string) (float64, bool) {
		v, err := strconv.ParseFloat(x, 64)
		return v, err == nil && v >= 0 && !math.IsInf(v, 0)
	}
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	tooLong := func(v float64) error {
		return p.errf(n, field, "%v s in %q is above the maximum of %v (100 years)", v, s, timespan.Max)
	}
	a, ok := num(m[2])
	if !ok {
		return bad()
	}
	if m[1] != "constant_throughput" && a > timespan.Max.Seconds() {
		return nil, tooLong(a)
	}
	switch m[1] {
	case "between":
		b, ok := num(m[3])
		if !ok {
			return bad()
		}
		if b > timespan.Max.Seconds() {
			return nil, tooLong(b)
		}
		return &worker.WaitSpec{Kind: worker.WaitBetween, Min: secs(a), Max: secs(b)}, nil
	}
	if m[3] != "" {
		return bad()
	}
	switch m[1] {
	case "constant":
		return &worker.WaitSpec{Kind: worker.WaitConstant, Min: secs(a)}, nil
	case "constant_pacing":
		return &worker.WaitSpec{Kind: worker.WaitConstantPacing, Min: secs(a)}, nil
	default:
		if a == 0 {
			return nil, p.errf(n, field, "constant_throughput needs a rate above 0")
		}
		return &worker.WaitSpec{Kind: worker.WaitConstantThroughput, PerSecond: a}, nil
	}
}

// request is one compiled HTTP request of a task.
type request struct {
	req    httpc.Request
	expect *worker.Expect
	json   bool
	// read at run time (correlate.go); dyn is nil for a fixed request
	pathT template
	hdrT  []template // aligned with req.Headers
	bodyT *template
	ext   *extChecks
	caps  []capture
	dyn   *dynRequest
	why   string // worker.Request.Dynamic
}

// task reads a task: a single request (method, path, name, ...; its name is
// the stats name) or a named list of requests, with a weight.
func (p *parser) task(n *yaml.Node, path string) (worker.Task, error) {
	t := worker.Task{}
	single := &request{}
	var reqs []*request
	var isSingle, parallel bool
	var name string
	var parNode *yaml.Node
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "name":
			name, err = p.str(v, field)
		case "weight":
			t.Weight, err = p.int_(v, field, 1)
		case "tags":
			t.Tags, err = p.tags(v, field)
		case "requests":
			if v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				reqs = []*request{} // a task that sends nothing (a locustfile's pass or interrupt())
				break
			}
			reqs, err = p.requests(v, field)
		case "parallel":
			parallel, err = p.bool_(v, field)
			parNode = v
		default:
			isSingle = true
			err = p.requestField(single, key, v, field)
		}
		return err
	})
	if err != nil {
		return t, err
	}
	switch {
	case isSingle && reqs != nil:
		return t, p.errf(n, path, "a task has either request fields (method, path, ...) or requests, not both")
	case isSingle:
		single.req.Name = name
		if err := p.finishRequest(single, n, path); err != nil {
			return t, err
		}
		reqs = []*request{single}
		t.Name = single.req.StatsName()
	case reqs == nil:
		return t, p.errf(n, path, "a task needs a path (or a list of requests)")
	default:
		t.Name = name
		if t.Name == "" && len(reqs) == 0 {
			return t, p.errf(n, path+".name", "missing: a task without requests needs a name")
		}
		if t.Name == "" {
			t.Name = reqs[0].req.StatsName()
		}
	}
	t.Requests = asRequests(reqs)
	t.Fn = worker.RequestsFunc(t.Requests)
	if p.cls != nil {
		p.cls.tasks = append(p.cls.tasks, reqs)
	}
	if parallel {
		if isSingle {
			return t, p.errf(parNode, path+".parallel", "needs a list of requests")
		}
		for _, r := range reqs {
			if r.dyn != nil {
				return t, p.errf(parNode, path+".parallel", "a parallel task sends its requests at once: they cannot read or write the user's variables, capture or check beyond status (%s)", r.why)
			}
		}
		t.Parallel = true
		t.Fn = worker.ParallelRequestsFunc(t.Requests)
		p.par = append(p.par, parallelAt{parNode, path + ".parallel"})
	}
	return t, nil
}

func (p *parser) requests(n *yaml.Node, path string) ([]*request, error) {
	var out []*request
	err := p.list(n, path, func(i int, item *yaml.Node, field string) error {
		r := &request{}
		err := p.fields(item, field, func(key string, v *yaml.Node, f string) error {
			return p.requestField(r, key, v, f)
		})
		if err != nil {
			return err
		}
		if err := p.finishRequest(r, item, field); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err == nil && len(out) == 0 {
		return nil, p.errf(n, path, "is empty")
	}
	return out, err
}

var methodRe = regexp.MustCompile(`^[A-Z]+$`)

func (p *parser) requestField(r *request, key string, v *yaml.Node, field string) error {
	var err error
	switch key {
	case "method":
		var m string
		m, err = p.str(v, field)
		m = strings.ToUpper(strings.TrimSpace(m))
		if err == nil && !methodRe.MatchString(m) {
			err = p.errf(v, field, "invalid HTTP method %q", m)
		}
		r.req.Method = m
	case "path":
		r.pathT, err = p.tmpl(v, field)
		r.req.Path = r.pathT.text
		if err == nil && r.req.Path == "" {
			err = p.errf(v, field, "must not be empty")
		}
	case "name":
		r.req.Name, err = p.str(v, field)
	case "headers":
		r.req.Headers, r.hdrT, err = p.headersT(v, field)
	case "body":
		if r.req.Body != nil {
			return p.errf(v, field, "a request has body or json, not both")
		}
		var t template
		t, err = p.tmpl(v, field)
		r.req.Body = []byte(t.text)
		r.bodyT = &t
	case "json":
		if r.req.Body != nil {
			return p.errf(v, field, "a request has body or json, not both")
		}
		r.bodyT, err = p.jsonBody(v, field)
		if err == nil {
			r.req.Body = []byte(r.bodyT.text)
			r.json = true
		}
	case "checks":
		r.expect = &worker.Expect{}
		err = p.checks(v, field, r.expect, r)
	case "capture":
		err = p.captures(v, field, r)
	default:
		return errUnknown
	}
	return err
}

func (p *parser) finishRequest(r *request, n *yaml.Node, path string) error {
	if r.req.Path == "" {
		return p.errf(n, path+".path", "missing: a request needs a path")
	}
	if r.req.Method == "" {
		r.req.Method = "GET"
	}
	if r.json && !slices.ContainsFunc(r.req.Headers, func(h httpc.Header) bool { return strings.EqualFold(h.Key, "Content-Type") }) {
		// A Content-Type given in headers wins over the one json implies.
		r.req.Headers = append(r.req.Headers, httpc.Header{Key: "Content-Type", Value: "application/json"})
		r.hdrT = append(r.hdrT, template{text: "application/json", static: true})
	}
	return p.finishDynamic(r)
}

func (p *parser) checks(n *yaml.Node, path string, e *worker.Expect, r *request) error {
	return p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		switch key {
		case "status":
			ss, err := p.strOrList(v, field)
			if err != nil {
				return err
			}
			for _, s := range ss {
				c, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || c < 100 || c > 999 {
					return p.errf(v, field, "invalid status code %q", s)
				}
				e.Status = append(e.Status, c)
			}
		case "body_contains":
			return p.bodyContains(v, field, e, r)
		case "max_response_time":
			d, err := p.duration(v, field, time.Millisecond)
			if err != nil {
				return err
			}
			e.MaxResponseTime = d
		default:
			return p.extCheck(key, v, field, r)
		}
		return nil
	})
}

// plain converts a node to plain Go values for JSON, expanding variables in
// strings. Scalars keep their YAML types (numbers, booleans, null).
func (p *parser) plain(n *yaml.Node, field string) (any, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, p.errf(n, field, "%v", err)
			}
			return v, nil
		}
		return p.str(n, field)
	case yaml.SequenceNode:
		out := []any{}
		for i, c := range n.Content {
			v, err := p.plain(c, fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := p.str(n.Content[i], field)
			if err != nil {
				return nil, err
			}
			v, err := p.plain(n.Content[i+1], field+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return nil, p.errf(n, field, "unsupported YAML (%s)", kindName(n))
}

// asRequests returns the requests as data for worker.Task.Requests (and
// the class's on_start/on_stop), which a runtime without Go code (the data
// plane) sends; worker.RequestsFunc sends the same on the goroutine pool.
func asRequests(reqs []*request) []worker.Request {
	out := make([]worker.Request, len(reqs))
	for i, r := range reqs {
		out[i] = worker.Request{HTTP: r.req, Expect: r.expect, Dynamic: r.why}
	}
	return out
}

// expand replaces ${VAR} and ${VAR:-default} with environment values; $$
// is a literal $. A ${VAR} without default whose variable is unset is an
// error. Anything else is left as it is.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q", s)
			}
			expr := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validVar(name) {
				return "", fmt.Errorf("invalid variable name %q in %q", name, s)
			}
			v, ok := lookup(name)
			switch {
			case ok && (v != "" || !hasDef):
				b.WriteString(v)
			case hasDef:
				b.WriteString(def)
			default:
				return "", fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
			}
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func validVar(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
