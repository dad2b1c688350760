package locustfile

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// fnCtx translates one function body (a task, on_start, on_stop).
type fnCtx struct {
	r       *reader
	cls     *classInfo // the class whose attributes self.X reads
	class   string     // the user class, for errors
	self    string     // the first parameter's name
	taskSet bool
	locals  map[string]string   // local name -> template
	resps   map[string]*Request // local name -> the request whose response it holds
	reqs    []*Request
	reqName string // self.client.request_name
	inlined int    // depth of helper calls being inlined
	// assigning is set while an assignment's value is read: a random
	// draw kept in a variable is one draw in Python for every use.
	assigning bool
	steps     *int // loop iterations unrolled, shared with inlined helpers
}

var errNotConst = errors.New("not a constant")

// function translates a task or on_start/on_stop method into requests.
func (r *reader) function(d *defStmt, owner *classInfo, taskSet bool, class string) ([]*Request, error) {
	if d.Async {
		return nil, r.errf(d.P, class, "async def "+d.Name, "not read")
	}
	if len(d.Params) != 1 || d.Params[0].Star != "" {
		return nil, r.errf(d.P, class, "def "+d.Name, "a task takes exactly one parameter (self)")
	}
	f := &fnCtx{r: r, cls: owner, class: class, self: d.Params[0].Name, taskSet: taskSet,
		locals: map[string]string{}, resps: map[string]*Request{}, steps: new(int)}
	for i, s := range d.Body {
		if err := f.stmt(s, i == 0); err != nil {
			return nil, err
		}
	}
	return f.reqs, nil
}

func (f *fnCtx) errf(p Pos, construct, format string, args ...any) error {
	return f.r.errf(p, f.class, construct, format, args...)
}

const taskHelp = "keep this class on Python workers, or write the task as YAML (doc/locustfile.md)"

func (f *fnCtx) stmt(s stmt, first bool) error {
	switch s := s.(type) {
	case *exprStmt:
		if k, ok := s.X.(*constExpr); ok {
			if _, str := k.V.(string); str {
				return nil // a docstring or a bare string
			}
		}
		call, ok := s.X.(*callExpr)
		if !ok {
			return f.errf(s.P, describeExpr(s.X), "not read in a task; %s", taskHelp)
		}
		if f.isSelfCall(call, "interrupt") && f.taskSet {
			return nil // the flattened task tree has no stack to leave
		}
		if done, err := f.inline(call); done || err != nil {
			return err
		}
		req, err := f.request(call, false)
		if err != nil {
			return err
		}
		f.reqs = append(f.reqs, req)
		return nil
	case *simpleStmt:
		if s.Kind == "pass" {
			return nil
		}
		return f.errf(s.P, s.Kind, "not read in a task; %s", taskHelp)
	case *assignStmt:
		return f.assign(s)
	case *withStmt:
		return f.with(s)
	case *forStmt:
		return f.unroll(s)
	case *ifStmt:
		return f.errf(s.P, "if statement", "a task's requests are a fixed list in cicada (if is read only in a catch_response block as a check); %s", taskHelp)
	}
	return f.errf(s.pos(), describeStmt(s), "not read in a task; %s", taskHelp)
}

// maxInline bounds helper calls inside helper calls (and recursion).
const maxInline = 8

// inline translates self.helper() (a method of the class without
// arguments) in place: its requests become the caller's.
func (f *fnCtx) inline(c *callExpr) (bool, error) {
	a, ok := c.Fn.(*attrExpr)
	if !ok {
		return false, nil
	}
	if n, ok := a.X.(*nameExpr); !ok || n.ID != f.self {
		return false, nil
	}
	m := f.r.method(f.cls, a.Name)
	if m == nil {
		return false, nil
	}
	if len(c.Args) > 0 || len(c.Kw) > 0 || len(m.Params) != 1 {
		return true, f.errf(c.P, "call of self."+a.Name+" with arguments", "helper methods are read (inlined) without arguments only; %s", taskHelp)
	}
	if f.inlined >= maxInline {
		return true, f.errf(c.P, "call of self."+a.Name, "helper calls nested more than %d deep (recursion?)", maxInline)
	}
	if m.Async || len(m.Decorators) > 0 {
		return true, f.errf(c.P, "call of self."+a.Name, "decorated or async helpers are not read; %s", taskHelp)
	}
	inner := &fnCtx{r: f.r, cls: f.cls, class: f.class, self: m.Params[0].Name, taskSet: f.taskSet,
		locals: map[string]string{}, resps: map[string]*Request{}, reqName: f.reqName, inlined: f.inlined + 1, steps: f.steps}
	for i, s := range m.Body {
		if err := inner.stmt(s, i == 0); err != nil {
			return true, err
		}
	}
	f.reqs = append(f.reqs, inner.reqs...)
	f.reqName = inner.reqName
	return true, nil
}

// maxUnroll bounds the requests a for loop may unroll into.
const maxUnroll = 1000

// unroll translates "for x in range(n)" or "for x in CONSTANT_LIST" whose
// body the reader can translate: the body once per value, x a constant.
func (f *fnCtx) unroll(s *forStmt) error {
	bad := func(why string) error {
		return f.errf(s.P, "for loop", "%s; cicada unrolls loops over range(n) or a constant list into a fixed list of requests; %s", why, taskHelp)
	}
	target, ok := s.Target.(*nameExpr)
	if !ok || s.Else != nil {
		return bad("the loop variable must be one name, without else")
	}
	var values []any
	if call, ok := s.Iter.(*callExpr); ok && describeExpr(call.Fn) == "range" && len(call.Kw) == 0 && len(call.Args) >= 1 && len(call.Args) <= 3 {
		var n [3]int64
		for i, a := range call.Args {
			v, err := f.r.constValue(a, f.cls)
			x, isInt := v.(int64)
			if err != nil || !isInt {
				return bad("range() takes integer constants")
			}
			n[i] = x
		}
		lo, hi, step := int64(0), n[0], int64(1)
		if len(call.Args) >= 2 {
			lo, hi = n[0], n[1]
		}
		if len(call.Args) == 3 {
			step = n[2]
		}
		if step == 0 {
			return bad("range() step 0")
		}
		for x := lo; (step > 0 && x < hi || step < 0 && x > hi) && len(values) <= maxUnroll; x += step {
			values = append(values, x)
		}
	} else {
		v, err := f.r.constValue(s.Iter, f.cls)
		l, isList := v.([]any)
		if err != nil || !isList {
			return bad("the loop is not over range(n) or a constant list")
		}
		values = l
	}
	if len(values) > maxUnroll {
		return bad(fmt.Sprintf("more than %d iterations", maxUnroll))
	}
	for _, v := range values {
		switch v.(type) {
		case string, int64, float64, bool:
		default:
			return bad("the values must be strings or numbers")
		}
		if *f.steps++; *f.steps > maxUnroll*10 {
			return bad(fmt.Sprintf("more than %d loop iterations in one function", maxUnroll*10))
		}
		f.locals[target.ID] = escapeDollar(pyStr(v))
		for _, st := range s.Body {
			if err := f.stmt(st, false); err != nil {
				return err
			}
		}
		if len(f.reqs) > maxUnroll {
			return bad(fmt.Sprintf("more than %d requests", maxUnroll))
		}
	}
	return nil
}

// yamlHint says what to do about a call the reader does not translate:
// the YAML equivalent where the agreed syntax has one.
func yamlHint(fn string) string {
	switch {
	case fn == "time.sleep" || fn == "gevent.sleep":
		return "a pause inside a task has no YAML form: split the task and use wait_time, or keep this class on Python workers"
	case strings.HasPrefix(fn, "random."):
		return "cicada reads random.randint(a, b) and random.choice([...]) over constants inside a request's arguments (a YAML variable with each: request, doc/scenario.md)"
	case strings.HasSuffix(fn, ".pop") || strings.HasPrefix(fn, "csv."):
		return "test data taken per user is a YAML feed (feeds: with mode: unique, doc/locustfile.md)"
	case strings.HasPrefix(fn, "re."):
		return "a value cut from a response is a YAML capture (capture: {x: {regex: '...'}}, doc/locustfile.md)"
	case fn == "print" || strings.HasPrefix(fn, "logging.") || strings.Contains(fn, "logger."):
		return "logging from a task has no YAML form: drop it, or keep this class on Python workers"
	}
	return taskHelp
}

func (f *fnCtx) isSelfCall(c *callExpr, method string) bool {
	a, ok := c.Fn.(*attrExpr)
	if !ok || a.Name != method {
		return false
	}
	n, ok := a.X.(*nameExpr)
	return ok && n.ID == f.self
}

// isClient reports whether e is self.client (or self.user.client in a
// TaskSet).
func (f *fnCtx) isClient(e expr) bool {
	a, ok := e.(*attrExpr)
	if !ok || a.Name != "client" {
		return false
	}
	if n, ok := a.X.(*nameExpr); ok && n.ID == f.self {
		return true
	}
	if u, ok := a.X.(*attrExpr); ok && u.Name == "user" && f.taskSet {
		n, ok := u.X.(*nameExpr)
		return ok && n.ID == f.self
	}
	return false
}

var clientMethods = map[string]string{"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH",
	"delete": "DELETE", "head": "HEAD", "options": "OPTIONS", "request": ""}

// request translates self.client.METHOD(...); catch reports whether the
// call may take catch_response=True (a with statement).
func (f *fnCtx) request(c *callExpr, with bool) (*Request, error) {
	a, ok := c.Fn.(*attrExpr)
	if !ok || !f.isClient(a.X) {
		fn := describeExpr(c.Fn)
		return nil, f.errf(c.P, "call of "+fn, "only self.client requests are read in a task; %s", yamlHint(fn))
	}
	method, known := clientMethods[a.Name]
	if !known {
		return nil, f.errf(c.P, "self.client."+a.Name, "not read: cicada reads get, post, put, patch, delete, head, options and request")
	}
	req := &Request{Line: c.P.Line, Method: method}
	args := c.Args
	for _, x := range args {
		if _, star := x.(*starExpr); star {
			return nil, f.errf(x.pos(), "*args in a request", "not read")
		}
	}
	if a.Name == "request" {
		if len(args) < 1 {
			if k := kwarg(c, "method"); k == nil {
				return nil, f.errf(c.P, "self.client.request", "needs a method")
			}
		}
		var mx expr
		if len(args) > 0 {
			mx, args = args[0], args[1:]
		} else {
			mx = kwarg(c, "method")
		}
		m, err := f.r.constValue(mx, f.cls)
		ms, ok := m.(string)
		if err != nil || !ok || !methodName.MatchString(ms) {
			return nil, f.errf(mx.pos(), "self.client.request method "+describeExpr(mx), "the method must be a string constant")
		}
		req.Method = strings.ToUpper(ms)
	}
	var urlX expr
	if len(args) > 0 {
		urlX, args = args[0], args[1:]
	} else if k := kwarg(c, "url"); k != nil {
		urlX = k
	} else {
		return nil, f.errf(c.P, "self.client."+a.Name, "needs a URL")
	}
	path, err := f.r.template(urlX, f)
	if err != nil {
		return nil, f.errf(urlX.pos(), "URL "+describeExpr(urlX), "%v", err)
	}
	if path == "" {
		return nil, f.errf(urlX.pos(), "URL", "must not be empty")
	}
	req.Path = path
	// requests' positional parameters after url.
	var pos []string
	switch req.Method {
	case "GET", "OPTIONS", "HEAD", "DELETE":
		if a.Name != "request" {
			pos = []string{"params"}
		}
	case "POST", "PUT", "PATCH":
		if a.Name != "request" {
			pos = []string{"data", "json"}
		}
	}
	if len(args) > len(pos) {
		return nil, f.errf(args[len(pos)].pos(), "positional argument "+describeExpr(args[len(pos)]), "not read: use a keyword argument")
	}
	kws := map[string]expr{}
	for i, x := range args {
		kws[pos[i]] = x
	}
	for _, k := range c.Kw {
		if k.Name == "" {
			return nil, f.errf(k.P, "**kwargs in a request", "not read")
		}
		if k.Name == "url" || k.Name == "method" && a.Name == "request" {
			continue
		}
		kws[k.Name] = k.Value
	}
	names := make([]string, 0, len(kws))
	for k := range kws {
		names = append(names, k)
	}
	sort.Strings(names)
	var params string
	for _, k := range names {
		v := kws[k]
		switch k {
		case "name":
			if req.Name, err = f.r.template(v, f); err != nil {
				return nil, f.errf(v.pos(), "name="+describeExpr(v), "%v", err)
			}
		case "headers":
			if req.Headers, err = f.kvs(v, "headers"); err != nil {
				return nil, err
			}
		case "params":
			kv, err := f.kvs(v, "params")
			if err != nil {
				return nil, err
			}
			var q []string
			for _, p := range kv {
				q = append(q, queryEscape(p.Key)+"="+queryEscape(p.Value))
			}
			params = strings.Join(q, "&")
		case "json":
			j, err := f.jsonValue(v)
			if err != nil {
				return nil, err
			}
			req.JSON, req.HasJSON = j, true
		case "data":
			if d, ok := v.(*dictExpr); ok {
				kv, err := f.kvs(d, "data")
				if err != nil {
					return nil, err
				}
				var q []string
				for _, p := range kv {
					q = append(q, formEscape(p.Key)+"="+formEscape(p.Value))
				}
				req.Body, req.HasBody, req.Form = strings.Join(q, "&"), true, true
				continue
			}
			if req.Body, err = f.r.template(v, f); err != nil {
				return nil, f.errf(v.pos(), "data="+describeExpr(v), "%v", err)
			}
			req.HasBody = true
		case "catch_response":
			b, err := f.r.constValue(v, f.cls)
			if err != nil || b != true && b != false {
				return nil, f.errf(v.pos(), "catch_response="+describeExpr(v), "must be True or False")
			}
			if b == true && !with {
				return nil, f.errf(v.pos(), "catch_response=True outside a with statement", "not read")
			}
		default:
			return nil, f.errf(v.pos(), k+"= in a request", "not read: cicada reads name, headers, params, json, data and catch_response")
		}
	}
	if req.Name == "" {
		req.Name = f.reqName
	}
	if req.HasJSON && req.HasBody {
		return nil, f.errf(c.P, "json= and data=", "a request has one body")
	}
	if params != "" {
		sep := "?"
		if strings.Contains(req.Path, "?") {
			sep = "&"
		}
		req.Path += sep + params
	}
	return req, nil
}

func kwarg(c *callExpr, name string) expr {
	for _, k := range c.Kw {
		if k.Name == name {
			return k.Value
		}
	}
	return nil
}

// queryEscape escapes a template for a URL query, leaving ${...} intact.
func queryEscape(s string) string { return escapeKeepVars(s, url.QueryEscape) }
func formEscape(s string) string  { return escapeKeepVars(s, url.QueryEscape) }

var varRef = regexp.MustCompile(`\$\$|\$\{[^}]*\}`)

func escapeKeepVars(s string, esc func(string) string) string {
	var b strings.Builder
	last := 0
	for _, m := range varRef.FindAllStringIndex(s, -1) {
		b.WriteString(strings.ReplaceAll(esc(s[last:m[0]]), "%24", "$$"))
		tok := s[m[0]:m[1]]
		if tok == "$$" {
			b.WriteString("%24")
		} else {
			b.WriteString(tok)
		}
		last = m[1]
	}
	b.WriteString(esc(s[last:]))
	return b.String()
}

// kvs reads a dict literal of string keys and template values.
func (f *fnCtx) kvs(v expr, what string) ([]KV, error) {
	if n, ok := v.(*nameExpr); ok {
		if c, ok := f.r.consts[n.ID]; ok {
			if m, ok := c.(*orderedMap); ok {
				var out []KV
				for i, k := range m.keys {
					out = append(out, KV{Key: escapeDollar(k), Value: escapeDollar(pyStr(m.vals[i]))})
				}
				return out, nil
			}
		}
	}
	d, ok := v.(*dictExpr)
	if !ok {
		return nil, f.errf(v.pos(), what+"="+describeExpr(v), "must be a dict literal or a module constant dict")
	}
	var out []KV
	for i, k := range d.Keys {
		if k == nil {
			return nil, f.errf(v.pos(), what+"={**...}", "not read")
		}
		ks, err := f.r.template(k, f)
		if err != nil {
			return nil, f.errf(k.pos(), what+" key "+describeExpr(k), "%v", err)
		}
		vs, err := f.r.template(d.Values[i], f)
		if err != nil {
			return nil, f.errf(d.Values[i].pos(), what+" value "+describeExpr(d.Values[i]), "%v", err)
		}
		out = append(out, KV{Key: ks, Value: vs})
	}
	return out, nil
}

// jsonValue converts a json= argument to plain values; strings are
// templates.
func (f *fnCtx) jsonValue(v expr) (any, error) {
	switch x := v.(type) {
	case *dictExpr:
		m := &orderedMap{}
		for i, k := range x.Keys {
			if k == nil {
				return nil, f.errf(x.P, "json={**...}", "not read")
			}
			kc, err := f.r.constValue(k, f.cls)
			ks, ok := kc.(string)
			if err != nil || !ok {
				return nil, f.errf(k.pos(), "json key "+describeExpr(k), "JSON keys must be string constants")
			}
			val, err := f.jsonValue(x.Values[i])
			if err != nil {
				return nil, err
			}
			m.set(escapeDollar(ks), val)
		}
		return m, nil
	case *listExpr:
		out := []any{}
		for _, e := range x.Elts {
			val, err := f.jsonValue(e)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	case *tupleExpr:
		return f.jsonValue(&listExpr{P: x.P, Elts: x.Elts})
	}
	if c, err := f.r.constValue(v, f.cls); err == nil {
		return escapeJSONConst(c), nil
	}
	s, err := f.r.template(v, f)
	if err != nil {
		return nil, f.errf(v.pos(), "json value "+describeExpr(v), "%v", err)
	}
	return s, nil
}

func escapeJSONConst(c any) any {
	switch c := c.(type) {
	case string:
		return escapeDollar(c)
	case *orderedMap:
		m := &orderedMap{}
		for i, k := range c.keys {
			m.set(escapeDollar(k), escapeJSONConst(c.vals[i]))
		}
		return m
	case []any:
		out := make([]any, len(c))
		for i, v := range c {
			out[i] = escapeJSONConst(v)
		}
		return out
	}
	return c
}

func (f *fnCtx) assign(s *assignStmt) error {
	if len(s.Targets) != 1 || s.Op != "=" || s.Value == nil {
		return f.errf(s.P, "assignment", "only NAME = value and self.NAME = value are read in a task; %s", taskHelp)
	}
	var name string
	switch t := s.Targets[0].(type) {
	case *nameExpr:
		name = t.ID
	case *attrExpr:
		if t.Name == "request_name" && f.isClient(t.X) {
			// Locust's client.request_name: the stats name of the
			// following requests (None resets it).
			if k, ok := s.Value.(*constExpr); ok && k.V == nil && !k.Ellipsis {
				f.reqName = ""
				return nil
			}
			v, err := f.r.template(s.Value, f)
			if err != nil {
				return f.errf(s.P, "self.client.request_name = "+describeExpr(s.Value), "%v", err)
			}
			f.reqName = v
			return nil
		}
		n, ok := t.X.(*nameExpr)
		if !ok || n.ID != f.self {
			return f.errf(s.P, "assignment to "+describeExpr(t), "not read; %s", taskHelp)
		}
		name = t.Name
		if name == "client" || name == "host" || name == "wait_time" {
			return f.errf(s.P, "assignment to self."+name, "not read; %s", taskHelp)
		}
	default:
		return f.errf(s.P, "assignment to "+describeExpr(t), "not read; %s", taskHelp)
	}
	if !validVarName(name) {
		return f.errf(s.P, "variable "+name, "not a name cicada's ${} accepts")
	}
	if call, ok := s.Value.(*callExpr); ok {
		if a, ok := call.Fn.(*attrExpr); ok && f.isClient(a.X) {
			req, err := f.request(call, false)
			if err != nil {
				return err
			}
			f.reqs = append(f.reqs, req)
			f.resps[name] = req
			return nil
		}
	}
	if req, capt, ok, err := f.capture(s.Value); ok || err != nil {
		if err != nil {
			return err
		}
		capt.Name = name
		req.Captures = append(req.Captures, capt)
		f.locals[name] = "${" + name + "}"
		if _, isAttr := s.Targets[0].(*attrExpr); isAttr {
			f.cls.attrs[name] = &nameExpr{P: s.P, ID: "\x00capture:" + name}
		}
		return nil
	}
	f.assigning = true
	t, err := f.r.template(s.Value, f)
	f.assigning = false
	if err != nil {
		return f.errf(s.Value.pos(), "assignment "+name+" = "+describeExpr(s.Value), "%v; %s", err, taskHelp)
	}
	if _, isAttr := s.Targets[0].(*attrExpr); isAttr && !f.r.inOnStart {
		return f.errf(s.P, "assignment self."+name+" = "+describeExpr(s.Value),
			"a value kept on the user is read when on_start sets it (tasks run in any order); %s", taskHelp)
	}
	f.locals[name] = t
	if _, isAttr := s.Targets[0].(*attrExpr); isAttr {
		// self.x = value: later self.x reads the template (not the
		// expression, so self.x = self.x + "a" cannot loop).
		f.cls.attrs[name] = &nameExpr{P: s.P, ID: tmplMarker + t}
	}
	return nil
}

// tmplMarker prefixes a class attribute set by self.x = value in a
// function: the rest is the value's template.
const tmplMarker = "\x00template:"

// capture reads resp.json()[...]... or resp.headers["X"] of a response
// held by a local name (or the with statement's name).
func (f *fnCtx) capture(e expr) (*Request, Capture, bool, error) {
	var keys []expr
	x := e
	for {
		s, ok := x.(*subscriptExpr)
		if !ok {
			break
		}
		keys = append([]expr{s.Index}, keys...)
		x = s.X
	}
	if len(keys) == 0 {
		return nil, Capture{}, false, nil
	}
	// resp.headers["X"]
	if a, ok := x.(*attrExpr); ok && a.Name == "headers" {
		if n, ok := a.X.(*nameExpr); ok && f.resps[n.ID] != nil {
			k, err := f.r.constValue(keys[0], f.cls)
			ks, isStr := k.(string)
			if err != nil || !isStr || len(keys) != 1 {
				return nil, Capture{}, true, f.errf(e.pos(), describeExpr(e), "a header capture needs one string constant key")
			}
			return f.resps[n.ID], Capture{Header: ks}, true, nil
		}
	}
	call, ok := x.(*callExpr)
	if !ok || len(call.Args) > 0 || len(call.Kw) > 0 {
		return nil, Capture{}, false, nil
	}
	a, ok := call.Fn.(*attrExpr)
	if !ok || a.Name != "json" {
		return nil, Capture{}, false, nil
	}
	n, ok := a.X.(*nameExpr)
	if !ok || f.resps[n.ID] == nil {
		return nil, Capture{}, false, nil
	}
	path, err := f.jsonPath(keys)
	if err != nil {
		return nil, Capture{}, true, f.errf(e.pos(), describeExpr(e), "%v", err)
	}
	return f.resps[n.ID], Capture{JSONPath: path}, true, nil
}

var methodName = regexp.MustCompile(`^[A-Za-z]+$`)

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (f *fnCtx) jsonPath(keys []expr) (string, error) {
	var b strings.Builder
	b.WriteString("$")
	for _, k := range keys {
		v, err := f.r.constValue(k, f.cls)
		if err != nil {
			return "", fmt.Errorf("JSON keys and indexes must be constants")
		}
		switch v := v.(type) {
		case string:
			if !plainKey.MatchString(v) {
				return "", fmt.Errorf("JSON key %q: cicada's JSON paths take keys of letters, digits, _ and -", v)
			}
			b.WriteString("." + v)
		case int64:
			if v < 0 {
				return "", fmt.Errorf("negative JSON index %d", v)
			}
			fmt.Fprintf(&b, "[%d]", v)
		default:
			return "", fmt.Errorf("JSON keys must be strings or integers")
		}
	}
	return b.String(), nil
}

// with translates "with self.client.get(..., catch_response=True) as r:".
func (f *fnCtx) with(s *withStmt) error {
	if len(s.Items) != 1 {
		return f.errf(s.P, "with statement", "one request per with statement is read")
	}
	call, ok := s.Items[0].X.(*callExpr)
	if !ok {
		return f.errf(s.P, "with "+describeExpr(s.Items[0].X), "only with self.client.METHOD(...) as response is read; %s", taskHelp)
	}
	a, ok := call.Fn.(*attrExpr)
	if !ok || !f.isClient(a.X) {
		return f.errf(s.P, "with "+describeExpr(call.Fn), "only with self.client.METHOD(...) as response is read; %s", taskHelp)
	}
	req, err := f.request(call, true)
	if err != nil {
		return err
	}
	f.reqs = append(f.reqs, req)
	catch := false
	if k := kwarg(call, "catch_response"); k != nil {
		b, _ := f.r.constValue(k, f.cls)
		catch = b == true
	}
	var resp string
	if s.Items[0].As != nil {
		n, ok := s.Items[0].As.(*nameExpr)
		if !ok {
			return f.errf(s.P, "with ... as "+describeExpr(s.Items[0].As), "needs a name")
		}
		resp = n.ID
		f.resps[resp] = req
	}
	for i, st := range s.Body {
		switch st := st.(type) {
		case *ifStmt:
			if !catch {
				return f.errf(st.P, "if statement", "checks are read in a catch_response=True block only")
			}
			if err := f.checkIf(st, req, resp); err != nil {
				return err
			}
		case *exprStmt:
			if c, ok := st.X.(*callExpr); ok && resp != "" && catch {
				if m := respMethod(c, resp); m == "success" && i == len(s.Body)-1 && len(c.Args) == 0 {
					// success() at the end: the checks above decide.
					continue
				}
			}
			if err := f.stmt(st, false); err != nil {
				return err
			}
		default:
			if err := f.stmt(st, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func respMethod(c *callExpr, resp string) string {
	a, ok := c.Fn.(*attrExpr)
	if !ok {
		return ""
	}
	n, ok := a.X.(*nameExpr)
	if !ok || n.ID != resp {
		return ""
	}
	return a.Name
}

// isRespCall reports whether the statements are exactly one resp.m(...)
// call (failure takes a message).
func isRespCall(body []stmt, resp, m string) bool {
	if len(body) != 1 {
		return false
	}
	e, ok := body[0].(*exprStmt)
	if !ok {
		return false
	}
	c, ok := e.X.(*callExpr)
	return ok && respMethod(c, resp) == m
}

// checkIf reads "if COND: resp.failure(...)" and "if COND: resp.success()
// else: resp.failure(...)".
func (f *fnCtx) checkIf(s *ifStmt, req *Request, resp string) error {
	if req.Checks == nil {
		req.Checks = &Checks{}
	}
	switch {
	case isRespCall(s.Body, resp, "failure") && s.Else == nil:
		return f.cond(s.Test, false, req.Checks, resp)
	case isRespCall(s.Body, resp, "success") && !s.Elif && isRespCall(s.Else, resp, "failure"):
		return f.cond(s.Test, true, req.Checks, resp)
	}
	return f.errf(s.P, "if statement in a catch_response block",
		"cicada reads `if COND: %[1]s.failure(...)` and `if COND: %[1]s.success() else: %[1]s.failure(...)` as checks; "+
			"write the other forms as YAML checks (doc/locustfile.md)", resp)
}

// cond adds the checks that hold when e evaluates to want.
func (f *fnCtx) cond(e expr, want bool, ch *Checks, resp string) error {
	bad := func() error {
		return f.errf(e.pos(), "condition "+describeExpr(e),
			"not a check cicada reads (status_code, text, json()[...] and elapsed compared with constants)")
	}
	switch x := e.(type) {
	case *unaryExpr:
		if x.Op == "not" {
			return f.cond(x.X, !want, ch, resp)
		}
	case *boolExpr:
		if x.Op == "or" && !want || x.Op == "and" && want {
			for _, y := range x.Xs {
				if err := f.cond(y, want, ch, resp); err != nil {
					return err
				}
			}
			return nil
		}
	case *compareExpr:
		if len(x.Ops) != 1 {
			return bad()
		}
		op, lhs, rhs := x.Ops[0], x.X, x.Ys[0]
		if !want {
			neg := map[string]string{"==": "!=", "!=": "==", "in": "not in", "not in": "in", "<": ">=", ">": "<=", "<=": ">", ">=": "<"}
			op = neg[op]
		}
		// resp.status_code == N / in (...)
		if isRespAttr(lhs, resp, "status_code") {
			v, err := f.r.constValue(rhs, f.cls)
			if err != nil {
				return bad()
			}
			var codes []int
			switch op {
			case "==":
				n, ok := v.(int64)
				if !ok {
					return bad()
				}
				codes = []int{int(n)}
			case "in":
				l, ok := v.([]any)
				if !ok {
					return bad()
				}
				for _, c := range l {
					n, ok := c.(int64)
					if !ok {
						return bad()
					}
					codes = append(codes, int(n))
				}
			default:
				return bad()
			}
			if ch.Status != nil {
				return f.errf(e.pos(), "second status check", "one status check per request is read")
			}
			ch.Status = codes
			return nil
		}
		// "s" in resp.text
		if isRespAttr(rhs, resp, "text") && op == "in" {
			v, err := f.r.constValue(lhs, f.cls)
			s, ok := v.(string)
			if err != nil || !ok {
				return bad()
			}
			ch.BodyContains = append(ch.BodyContains, escapeDollar(s))
			return nil
		}
		// resp.elapsed.total_seconds() < x
		if isElapsed(lhs, resp) && (op == "<" || op == "<=") {
			v, err := f.r.constValue(rhs, f.cls)
			if err != nil {
				return bad()
			}
			var secs float64
			switch n := v.(type) {
			case int64:
				secs = float64(n)
			case float64:
				secs = n
			default:
				return bad()
			}
			ch.MaxResponseTime = math.Round(secs * 1000)
			return nil
		}
		// resp.json()[...] == v
		if op == "==" {
			if _, capt, ok, err := f.capture(lhs); ok && err == nil && capt.JSONPath != "" {
				v, err := f.r.constValue(rhs, f.cls)
				if err != nil {
					return bad()
				}
				ch.JSON = append(ch.JSON, JSONCheck{Path: capt.JSONPath, Value: escapeJSONConst(v)})
				return nil
			}
		}
	}
	return bad()
}

func isRespAttr(e expr, resp, name string) bool {
	a, ok := e.(*attrExpr)
	if !ok || a.Name != name {
		return false
	}
	n, ok := a.X.(*nameExpr)
	return ok && n.ID == resp
}

func isElapsed(e expr, resp string) bool {
	c, ok := e.(*callExpr)
	if !ok || len(c.Args) > 0 {
		return false
	}
	a, ok := c.Fn.(*attrExpr)
	return ok && a.Name == "total_seconds" && isRespAttr(a.X, resp, "elapsed")
}
