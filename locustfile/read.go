package locustfile

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"
)

// MaxFileSize is the largest locustfile Read accepts.
const MaxFileSize = 4 << 20

// Read parses and translates one locustfile's source. name is used in
// errors. A file-level problem (syntax, an import of a module cicada does
// not read, module-level code) is an error; a user class outside the
// subset is listed in Module.Refused and the others are kept. If no user
// class is left the error wraps ErrNoUsers and the first refusal.
func Read(name string, src []byte) (*Module, error) {
	if len(src) > MaxFileSize {
		return nil, &Error{File: name, Line: 1, Col: 1, Construct: "syntax", Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	if !utf8.Valid(src) {
		bad := 0
		for len(src[bad:]) > 0 {
			r, n := utf8.DecodeRune(src[bad:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			bad += n
		}
		line := 1 + bytes.Count(src[:bad], []byte("\n"))
		return nil, &Error{File: name, Line: line, Col: 1, Construct: "syntax", Msg: "not UTF-8 (Python reads source files as UTF-8)"}
	}
	stmts, err := parseModule(name, string(src))
	if err != nil {
		return nil, err
	}
	r := &reader{file: name, consts: map[string]any{}, funcs: map[string]*defStmt{},
		classes: map[string]*classInfo{}, imports: map[string]string{}}
	if err := r.module(stmts); err != nil {
		return nil, err
	}
	m := &Module{File: name}
	for _, c := range r.order {
		switch c.kind {
		case kindUser, kindUnknown, kindPlainUser:
		case kindShape:
			if m.Stages != nil {
				return nil, r.errf(c.stmt.P, "", "class "+c.stmt.Name, "a second LoadTestShape class; Locust runs one shape: keep one")
			}
			st, err := r.shape(c)
			if err != nil {
				return nil, err
			}
			m.Stages = st
			continue
		default:
			continue
		}
		if r.isAbstract(c) {
			continue
		}
		u, err := r.user(c)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				e = r.errf(c.stmt.P, c.stmt.Name, "class", "%v", err)
			}
			e.Class = c.stmt.Name
			m.Refused = append(m.Refused, e)
			continue
		}
		m.Users = append(m.Users, u)
	}
	if len(m.Users) == 0 {
		if len(m.Refused) > 0 {
			return m, fmt.Errorf("%w: %w", ErrNoUsers, m.Refused[0])
		}
		return m, fmt.Errorf("%w: %s defines no HttpUser or FastHttpUser class", ErrNoUsers, name)
	}
	return m, nil
}

type classKind uint8

const (
	kindOther classKind = iota
	kindUser
	kindPlainUser // locust.User without an HTTP client
	kindTaskSet
	kindSeqTaskSet
	kindShape
	kindUnknown // a base the reader does not know
)

type classInfo struct {
	stmt    *classStmt
	kind    classKind
	base    *classInfo
	unknown string // the unknown base's name
	attrs   map[string]expr
	methods map[string]*defStmt
	tasks   []taskRef
	err     *Error // the first construct of the body outside the subset
}

type taskRef struct {
	fn     *defStmt
	cls    *classInfo
	weight int
	tags   []string
	line   int
}

type reader struct {
	file    string
	consts  map[string]any
	funcs   map[string]*defStmt
	classes map[string]*classInfo
	order   []*classInfo
	imports map[string]string // local name -> "module.name" or "module"
	budget  int               // constValue's remaining steps
	// inOnStart is set while a user's on_start (its own or its only
	// TaskSet's) is translated: self.x = constant is read there only.
	inOnStart bool
	// vars are the random draws of the user class being translated.
	vars []Var
}

func (r *reader) errf(p Pos, class, construct, format string, args ...any) *Error {
	return &Error{File: r.file, Line: p.Line, Col: p.Col, Class: class, Construct: construct, Msg: fmt.Sprintf(format, args...)}
}

// stdlibImports are modules whose import has no effect on a load test;
// using anything from them (other than random.randint/choice and
// os.environ/getenv) is refused where it is used.
var stdlibImports = map[string]bool{
	"random": true, "os": true, "time": true, "json": true, "math": true, "string": true, "uuid": true,
	"datetime": true, "logging": true, "sys": true, "re": true, "typing": true, "__future__": true,
	"collections": true, "collections.abc": true, "contextlib": true, "itertools": true, "functools": true,
}

const moduleHelp = "keep this locustfile on Python workers, or move it to a YAML scenario (cicada convert reads the parts it understands; doc/locustfile.md)"

func (r *reader) module(stmts []stmt) error {
	for i, s := range stmts {
		switch s := s.(type) {
		case *exprStmt:
			if c, ok := s.X.(*constExpr); ok && i == 0 {
				_ = c // the module docstring
				continue
			}
			if c, ok := s.X.(*constExpr); ok {
				if _, str := c.V.(string); str {
					continue
				}
			}
			return r.errf(s.P, "", describeExpr(s.X), "module-level code runs when Python imports the file and cicada cannot run it; %s", moduleHelp)
		case *importStmt:
			if err := r.importStmt(s); err != nil {
				return err
			}
		case *ifStmt:
			if isMainGuard(s.Test) && s.Else == nil {
				continue // runs only under python file.py
			}
			return r.errf(s.P, "", "module-level if statement", "module-level code runs when Python imports the file; %s", moduleHelp)
		case *assignStmt:
			n, ok := s.Targets[0].(*nameExpr)
			if len(s.Targets) != 1 || !ok || s.Op != "=" || s.Value == nil {
				return r.errf(s.P, "", "module-level assignment to "+describeExpr(s.Targets[0]),
					"only NAME = literal constants are read at module level; %s", moduleHelp)
			}
			v, err := r.constValue(s.Value, nil)
			if err != nil {
				return r.errf(s.P, "", "module-level assignment "+n.ID+" = "+describeExpr(s.Value),
					"only literal constants (strings, numbers, lists, dicts, f-strings of constants) are read at module level: %v; %s", err, moduleHelp)
			}
			r.consts[n.ID] = v
		case *defStmt:
			if len(s.Decorators) > 0 {
				d := describeExpr(s.Decorators[0])
				if c, ok := s.Decorators[0].(*callExpr); ok {
					d = describeExpr(c.Fn)
				}
				if strings.HasPrefix(d, "events.") {
					return r.errf(s.Decorators[0].pos(), "", "event hook @"+d,
						"event hooks run Python code inside Locust; cicada has no Python: keep this locustfile on Python workers, or drop the hook")
				}
				return r.errf(s.Decorators[0].pos(), "", "decorator @"+d, "module-level decorated functions are not read; %s", moduleHelp)
			}
			r.funcs[s.Name] = s
		case *classStmt:
			if err := r.class(s, nil); err != nil {
				return err
			}
		case *simpleStmt:
			if s.Kind == "pass" {
				continue
			}
			return r.errf(s.P, "", "module-level "+s.Kind, "not read; %s", moduleHelp)
		default:
			return r.errf(s.pos(), "", describeStmt(s), "module-level code is not read; %s", moduleHelp)
		}
	}
	return nil
}

func isMainGuard(e expr) bool {
	c, ok := e.(*compareExpr)
	if !ok || len(c.Ops) != 1 || c.Ops[0] != "==" {
		return false
	}
	n, ok1 := c.X.(*nameExpr)
	k, ok2 := c.Ys[0].(*constExpr)
	return ok1 && ok2 && n.ID == "__name__" && k.V == "__main__"
}

func (r *reader) importStmt(s *importStmt) error {
	if s.Level > 0 {
		return r.errf(s.P, "", "import from "+s.From, "relative imports load Python code cicada cannot run; %s", moduleHelp)
	}
	if s.From == "" {
		for _, a := range s.Names {
			if !stdlibImports[a.Name] && a.Name != "locust" && !strings.HasPrefix(a.Name, "locust.") {
				return r.refuseImport(s.P, a.Name)
			}
			local := a.As
			if local == "" {
				local = strings.SplitN(a.Name, ".", 2)[0]
			}
			r.imports[local] = a.Name
		}
		return nil
	}
	// locust's own modules: the names are recorded and anything but the
	// subset is refused where it is used.
	if s.From != "locust" && !strings.HasPrefix(s.From, "locust.") && !stdlibImports[s.From] {
		return r.refuseImport(s.P, s.From)
	}
	for _, a := range s.Names {
		if a.Name == "*" {
			return r.errf(s.P, "", "from "+s.From+" import *", "star imports are not read: import the names you use")
		}
		local := a.As
		if local == "" {
			local = a.Name
		}
		mod := s.From
		switch {
		case mod == "locust.user.wait_time", mod == "locust.user.task", mod == "locust.user.users" && a.Name == "HttpUser",
			mod == "locust.contrib.fasthttp" && a.Name == "FastHttpUser", mod == "locust.shape" && a.Name == "LoadTestShape":
			mod = "locust"
		}
		r.imports[local] = mod + "." + a.Name
	}
	return nil
}

func (r *reader) refuseImport(p Pos, mod string) error {
	return r.errf(p, "", "import "+mod,
		"module %s is Python code cicada cannot run (cicada reads imports of locust and of side-effect-free standard modules); %s", mod, moduleHelp)
}

// class records a class definition; outer is the enclosing class of a
// nested one.
func (r *reader) class(s *classStmt, outer *classInfo) error {
	c := &classInfo{stmt: s, attrs: map[string]expr{}, methods: map[string]*defStmt{}}
	if len(s.Bases) != 1 || len(s.Kw) > 0 {
		c.kind = kindUnknown
		c.unknown = "several bases"
		if len(s.Bases) == 0 {
			c.kind, c.unknown = kindOther, ""
		}
	} else {
		base := describeExpr(s.Bases[0])
		switch r.imports[base] {
		case "locust.HttpUser", "locust.FastHttpUser":
			c.kind = kindUser
		case "locust.User":
			c.kind = kindPlainUser
		case "locust.TaskSet":
			c.kind = kindTaskSet
		case "locust.SequentialTaskSet":
			c.kind = kindSeqTaskSet
		case "locust.LoadTestShape":
			c.kind = kindShape
		default:
			if b := r.classes[base]; b != nil {
				c.base, c.kind, c.unknown = b, b.kind, b.unknown
			} else {
				c.kind, c.unknown = kindUnknown, base
			}
		}
	}
	r.classes[s.Name] = c
	if outer == nil {
		// A later definition rebinds the name, as in Python.
		for i, o := range r.order {
			if o.stmt.Name == s.Name {
				r.order = append(r.order[:i:i], r.order[i+1:]...)
				break
			}
		}
		r.order = append(r.order, c)
	}
	setErr := func(e *Error) {
		if c.err == nil {
			c.err = e
		}
	}
	for i, st := range s.Body {
		switch st := st.(type) {
		case *exprStmt:
			if k, ok := st.X.(*constExpr); ok {
				if _, str := k.V.(string); str || i == 0 {
					continue
				}
			}
			setErr(r.errf(st.P, s.Name, describeExpr(st.X), "class-level code is not read"))
		case *simpleStmt:
			if st.Kind != "pass" {
				setErr(r.errf(st.P, s.Name, st.Kind, "class-level code is not read"))
			}
		case *assignStmt:
			n, ok := st.Targets[0].(*nameExpr)
			if len(st.Targets) != 1 || !ok || st.Op != "=" || st.Value == nil {
				setErr(r.errf(st.P, s.Name, "class-level assignment", "only NAME = value class attributes are read"))
				continue
			}
			c.attrs[n.ID] = st.Value
		case *defStmt:
			weight, tags, isTask, err := r.decorators(st.Decorators, s.Name)
			if err != nil {
				setErr(err)
				continue
			}
			if isTask {
				c.tasks = append(c.tasks, taskRef{fn: st, weight: weight, tags: tags, line: st.P.Line})
			} else if len(tags) > 0 {
				setErr(r.errf(st.P, s.Name, "@tag without @task", "tags are read on tasks only"))
			}
			c.methods[st.Name] = st
		case *classStmt:
			if err := r.class(st, c); err != nil {
				return err
			}
			inner := r.classes[st.Name]
			weight, tags, isTask, err := r.decorators(st.Decorators, s.Name)
			if err != nil {
				setErr(err)
				continue
			}
			if isTask {
				c.tasks = append(c.tasks, taskRef{cls: inner, weight: weight, tags: tags, line: st.P.Line})
			}
		default:
			setErr(r.errf(st.pos(), s.Name, describeStmt(st), "class-level code is not read"))
		}
	}
	return nil
}

// decorators reads @task, @task(n), @tag(...) of a method or nested class.
func (r *reader) decorators(decos []expr, class string) (weight int, tags []string, isTask bool, err *Error) {
	weight = 1
	for _, d := range decos {
		name := describeExpr(d)
		call, isCall := d.(*callExpr)
		if isCall {
			name = describeExpr(call.Fn)
		}
		switch r.imports[name] {
		case "locust.task":
			isTask = true
			if isCall {
				if len(call.Args) != 1 || len(call.Kw) > 0 {
					return 0, nil, false, r.errf(d.pos(), class, "@task(...)", "takes one weight")
				}
				v, e := r.constValue(call.Args[0], nil)
				n, ok := v.(int64)
				if e != nil || !ok || n < 0 || n > 1_000_000 {
					return 0, nil, false, r.errf(d.pos(), class, "@task(...)", "the weight must be an integer literal from 0 to 1000000")
				}
				weight = int(n)
			}
		case "locust.tag":
			if !isCall || len(call.Kw) > 0 {
				return 0, nil, false, r.errf(d.pos(), class, "@tag", "needs string arguments: @tag(\"name\")")
			}
			for _, a := range call.Args {
				v, e := r.constValue(a, nil)
				s, ok := v.(string)
				if e != nil || !ok {
					return 0, nil, false, r.errf(a.pos(), class, "@tag", "tags must be string constants")
				}
				tags = append(tags, s)
			}
		default:
			return 0, nil, false, r.errf(d.pos(), class, "decorator @"+name, "only @task and @tag are read on methods; keep this class on Python workers")
		}
	}
	return weight, tags, isTask, nil
}

// attr looks a class attribute up along the base chain.
func (r *reader) attr(c *classInfo, name string) (expr, *classInfo) {
	for k := c; k != nil; k = k.base {
		if v, ok := k.attrs[name]; ok {
			return v, k
		}
	}
	return nil, nil
}

func (r *reader) method(c *classInfo, name string) *defStmt {
	for k := c; k != nil; k = k.base {
		if m, ok := k.methods[name]; ok {
			return m
		}
	}
	return nil
}

func (r *reader) isAbstract(c *classInfo) bool {
	v, ok := c.attrs["abstract"] // not inherited, as in Locust
	if !ok {
		return false
	}
	b, err := r.constValue(v, c)
	return err == nil && b == true
}

// chainErr returns the first unsupported construct of c's class bodies.
func chainErr(c *classInfo) *Error {
	var first *Error
	for k := c; k != nil; k = k.base {
		if k.err != nil {
			first = k.err
		}
	}
	return first
}

// taskList returns a class's tasks as Locust's metaclass collects them:
// the bases' tasks, then the tasks attribute, then @task members.
func (r *reader) taskList(c *classInfo) ([]taskRef, error) {
	if c == nil {
		return nil, nil
	}
	// The bases' collected tasks come first (a tasks attribute adds to
	// them, as Locust's metaclass does).
	out, err := r.taskList(c.base)
	if err != nil {
		return nil, err
	}
	if v, ok := c.attrs["tasks"]; ok {
		ts, err := r.tasksAttr(v, c)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return append(out, c.tasks...), nil
}

// tasksAttr reads tasks = [f, Cls, ...] or {f: n, Cls: m}.
func (r *reader) tasksAttr(v expr, c *classInfo) ([]taskRef, error) {
	one := func(e expr, w int) (taskRef, error) {
		n, ok := e.(*nameExpr)
		if !ok {
			return taskRef{}, r.errf(e.pos(), c.stmt.Name, "tasks entry "+describeExpr(e), "tasks entries must be functions or TaskSet classes of this file")
		}
		if fn := c.methods[n.ID]; fn != nil {
			return taskRef{fn: fn, weight: w, line: e.pos().Line}, nil
		}
		if fn := r.funcs[n.ID]; fn != nil {
			return taskRef{fn: fn, weight: w, line: e.pos().Line}, nil
		}
		if k := r.classes[n.ID]; k != nil && (k.kind == kindTaskSet || k.kind == kindSeqTaskSet) {
			return taskRef{cls: k, weight: w, line: e.pos().Line}, nil
		}
		return taskRef{}, r.errf(e.pos(), c.stmt.Name, "tasks entry "+n.ID, "not a function or TaskSet class defined in this file")
	}
	var out []taskRef
	switch v := v.(type) {
	case *listExpr, *tupleExpr:
		var elts []expr
		if l, ok := v.(*listExpr); ok {
			elts = l.Elts
		} else {
			elts = v.(*tupleExpr).Elts
		}
		for _, e := range elts {
			t, err := one(e, 1)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	case *dictExpr:
		for i, k := range v.Keys {
			if k == nil {
				return nil, r.errf(v.P, c.stmt.Name, "tasks = {**...}", "not read")
			}
			w, err := r.constValue(v.Values[i], c)
			n, ok := w.(int64)
			if err != nil || !ok || n < 0 || n > 1_000_000 {
				return nil, r.errf(v.Values[i].pos(), c.stmt.Name, "tasks weight", "must be an integer constant from 0 to 1000000")
			}
			t, err := one(k, int(n))
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	default:
		return nil, r.errf(v.pos(), c.stmt.Name, "tasks = "+describeExpr(v), "tasks must be a list or a dict literal")
	}
	return out, nil
}

// leaf is one flattened task with its exact share.
type leaf struct {
	ref   taskRef
	owner *classInfo
	ratio *big.Rat
	tags  []string
}

// user translates a user class; the random draws its requests make
// (random.randint/choice) become its per-request variables.
func (r *reader) user(c *classInfo) (*User, error) {
	r.vars = nil
	u, err := r.userBody(c)
	if err != nil {
		return nil, err
	}
	u.Vars = r.vars
	return u, nil
}

func (r *reader) userBody(c *classInfo) (*User, error) {
	name := c.stmt.Name
	switch c.kind {
	case kindPlainUser:
		return nil, r.errf(c.stmt.P, name, "User subclass", "a User without an HTTP client runs arbitrary Python: keep this class on Python workers")
	case kindUnknown:
		return nil, r.errf(c.stmt.P, name, "base class "+c.unknown,
			"cicada reads HttpUser and FastHttpUser subclasses (and TaskSets): keep this class on Python workers")
	}
	if e := chainErr(c); e != nil {
		return nil, e
	}
	u := &User{Name: name, Line: c.stmt.P.Line}
	for k := c; k != nil; k = k.base {
		if d := k.methods["__init__"]; d != nil {
			return nil, r.errf(d.P, name, "def __init__", "a constructor runs arbitrary Python for each user; "+
				"move per-user set-up into on_start requests, or keep this class on Python workers")
		}
		if d := k.methods["wait_time"]; d != nil {
			return nil, r.errf(d.P, name, "def wait_time", "a custom wait function cannot run in cicada; use wait_time = between/constant/constant_pacing/constant_throughput")
		}
	}
	var err error
	if u.Host, err = r.strAttr(c, "host"); err != nil {
		return nil, err
	}
	if u.Weight, err = r.intAttr(c, "weight"); err != nil {
		return nil, err
	}
	if u.FixedCount, err = r.intAttr(c, "fixed_count"); err != nil {
		return nil, err
	}
	if u.Wait, err = r.waitAttr(c); err != nil {
		return nil, err
	}
	if m := r.method(c, "on_start"); m != nil {
		r.inOnStart = true
		u.OnStart, err = r.function(m, c, false, name)
		r.inOnStart = false
		if err != nil {
			return nil, err
		}
	}
	if m := r.method(c, "on_stop"); m != nil {
		if u.OnStop, err = r.function(m, c, false, name); err != nil {
			return nil, err
		}
	}
	top, err := r.taskList(c)
	if err != nil {
		return nil, err
	}
	if len(top) == 1 && top[0].cls != nil {
		// The user's only task is a TaskSet: the user runs it for ever,
		// with its on_start/on_stop and wait_time.
		ts := top[0].cls
		if e := chainErr(ts); e != nil {
			e.Class = name
			return nil, e
		}
		if m := r.method(ts, "on_start"); m != nil {
			r.inOnStart = true
			reqs, err := r.function(m, ts, true, name)
			r.inOnStart = false
			if err != nil {
				return nil, err
			}
			u.OnStart = append(u.OnStart, reqs...)
		}
		if m := r.method(ts, "on_stop"); m != nil {
			reqs, err := r.function(m, ts, true, name)
			if err != nil {
				return nil, err
			}
			u.OnStop = append(reqs, u.OnStop...)
		}
		if v, _ := r.attr(ts, "wait_time"); v != nil {
			if u.Wait, err = r.waitAttr(ts); err != nil {
				return nil, err
			}
		}
		if ts.kind == kindSeqTaskSet {
			return r.sequential(u, ts, top[0].tags)
		}
	}
	var leaves []leaf
	if err := r.flatten(c, c, top, big.NewRat(1, 1), nil, 0, &leaves, name); err != nil {
		return nil, err
	}
	leaves = mergeLeaves(leaves)
	if len(leaves) == 0 {
		return nil, r.errf(c.stmt.P, name, "class without tasks", "a user class needs at least one task (@task or tasks = [...])")
	}
	weights, err := intWeights(leaves)
	if err != nil {
		return nil, r.errf(c.stmt.P, name, "task weights", "%v", err)
	}
	seen := map[string]int{}
	for _, l := range leaves {
		seen[l.ref.fn.Name]++
	}
	for i, l := range leaves {
		isTS := l.owner.kind == kindTaskSet || l.owner.kind == kindSeqTaskSet
		reqs, err := r.function(l.ref.fn, l.owner, isTS, name)
		if err != nil {
			return nil, err
		}
		tn := l.ref.fn.Name
		if seen[tn] > 1 && l.owner != c {
			tn = l.owner.stmt.Name + "." + tn
		}
		u.Tasks = append(u.Tasks, &Task{Name: tn, Line: l.ref.line, Weight: weights[i], Tags: l.tags, Requests: reqs})
	}
	return u, nil
}

func (r *reader) sequential(u *User, ts *classInfo, tags []string) (*User, error) {
	refs, err := r.taskList(ts)
	if err != nil {
		return nil, err
	}
	u.Sequential = true
	for _, t := range refs {
		if t.cls != nil {
			return nil, r.errf(ts.stmt.P, u.Name, "TaskSet inside a SequentialTaskSet", "not read: flatten it into the sequence")
		}
		if t.weight == 0 {
			continue
		}
		reqs, err := r.function(t.fn, ts, true, u.Name)
		if err != nil {
			return nil, err
		}
		u.Tasks = append(u.Tasks, &Task{Name: t.fn.Name, Line: t.line, Weight: t.weight, Tags: append(append([]string{}, tags...), t.tags...), Requests: reqs})
	}
	if len(u.Tasks) == 0 {
		return nil, r.errf(ts.stmt.P, u.Name, "SequentialTaskSet without tasks", "needs at least one task")
	}
	return u, nil
}

// flatten walks the task tree; ratio is the share of the container.
func (r *reader) flatten(user, owner *classInfo, refs []taskRef, ratio *big.Rat, tags []string, depth int, out *[]leaf, class string) error {
	if depth > 20 {
		return r.errf(owner.stmt.P, class, "TaskSet nesting", "nested more than 20 levels (or a cycle)")
	}
	total := 0
	for _, t := range refs {
		total += t.weight
	}
	if total == 0 {
		return nil
	}
	for _, t := range refs {
		if t.weight == 0 {
			continue
		}
		share := new(big.Rat).Mul(ratio, big.NewRat(int64(t.weight), int64(total)))
		tt := append(append([]string{}, tags...), t.tags...)
		if t.fn != nil {
			*out = append(*out, leaf{ref: t, owner: owner, ratio: share, tags: tt})
			continue
		}
		k := t.cls
		if k.kind == kindSeqTaskSet {
			return r.errf(k.stmt.P, class, "SequentialTaskSet "+k.stmt.Name+" among other tasks",
				"a SequentialTaskSet is read as the only task of a user: make it the user's tasks = [%s]", k.stmt.Name)
		}
		if e := chainErr(k); e != nil {
			e.Class = class
			return e
		}
		if owner != user || len(refs) > 1 {
			for _, m := range []string{"on_start", "on_stop"} {
				if d := r.method(k, m); d != nil {
					return r.errf(d.P, class, "def "+m+" in TaskSet "+k.stmt.Name,
						"a nested TaskSet's %s is read only when the TaskSet is the user's only task", m)
				}
			}
			if v, _ := r.attr(k, "wait_time"); v != nil {
				return r.errf(v.pos(), class, "wait_time in TaskSet "+k.stmt.Name,
					"a nested TaskSet's wait_time is read only when the TaskSet is the user's only task")
			}
		}
		inner, err := r.taskList(k)
		if err != nil {
			return err
		}
		if err := r.flatten(user, k, inner, share, tt, depth+1, out, class); err != nil {
			return err
		}
	}
	return nil
}

// mergeLeaves adds up the shares of a function listed more than once in
// the same class (tasks = [a, a, b]), as Locust's ratio does.
func mergeLeaves(leaves []leaf) []leaf {
	type key struct {
		fn    *defStmt
		owner *classInfo
	}
	at := map[key]int{}
	var out []leaf
	for _, l := range leaves {
		k := key{l.ref.fn, l.owner}
		if i, ok := at[k]; ok {
			out[i].ratio = new(big.Rat).Add(out[i].ratio, l.ratio)
			continue
		}
		at[k] = len(out)
		out = append(out, l)
	}
	return out
}

// intWeights scales the leaves' exact shares to the smallest integers with
// the same ratios.
func intWeights(leaves []leaf) ([]int, error) {
	lcm := big.NewInt(1)
	for _, l := range leaves {
		d := l.ratio.Denom()
		g := new(big.Int).GCD(nil, nil, lcm, d)
		lcm.Mul(lcm, new(big.Int).Quo(d, g))
	}
	nums := make([]*big.Int, len(leaves))
	g := big.NewInt(0)
	for i, l := range leaves {
		n := new(big.Int).Mul(l.ratio.Num(), new(big.Int).Quo(lcm, l.ratio.Denom()))
		nums[i] = n
		g.GCD(nil, nil, g, n)
	}
	out := make([]int, len(leaves))
	for i, n := range nums {
		n.Quo(n, g)
		if !n.IsInt64() || n.Int64() > 1_000_000_000 {
			return nil, fmt.Errorf("the nested weights need integer weights above 1e9: simplify them")
		}
		out[i] = int(n.Int64())
	}
	return out, nil
}

func (r *reader) strAttr(c *classInfo, name string) (string, error) {
	v, owner := r.attr(c, name)
	if v == nil {
		return "", nil
	}
	s, err := r.template(v, &fnCtx{r: r, cls: owner, class: c.stmt.Name})
	if err != nil {
		return "", r.errf(v.pos(), c.stmt.Name, name+" = "+describeExpr(v), "must be a string constant: %v", err)
	}
	return s, nil
}

func (r *reader) intAttr(c *classInfo, name string) (int, error) {
	v, owner := r.attr(c, name)
	if v == nil {
		return 0, nil
	}
	x, err := r.constValue(v, owner)
	n, ok := x.(int64)
	if err != nil || !ok || n < 0 || n > 1_000_000_000 {
		return 0, r.errf(v.pos(), c.stmt.Name, name+" = "+describeExpr(v), "must be a non-negative integer constant")
	}
	return int(n), nil
}

func (r *reader) waitAttr(c *classInfo) (string, error) {
	v, owner := r.attr(c, "wait_time")
	if v == nil {
		return "", nil
	}
	bad := func(why string) error {
		return r.errf(v.pos(), c.stmt.Name, "wait_time = "+describeExpr(v),
			"%s; cicada reads between(a, b), constant(s), constant_pacing(s) and constant_throughput(n) with constant arguments", why)
	}
	call, ok := v.(*callExpr)
	if !ok {
		return "", bad("not a call")
	}
	fn := r.imports[describeExpr(call.Fn)]
	want := map[string]int{"locust.between": 2, "locust.constant": 1, "locust.constant_pacing": 1, "locust.constant_throughput": 1}[fn]
	if want == 0 {
		return "", bad("not a wait time function of locust")
	}
	if len(call.Args) != want || len(call.Kw) > 0 {
		return "", bad(fmt.Sprintf("takes %d positional arguments", want))
	}
	var args []string
	for _, a := range call.Args {
		x, err := r.constValue(a, owner)
		if err != nil {
			return "", bad(err.Error())
		}
		switch n := x.(type) {
		case int64:
			if n < 0 {
				return "", bad("negative")
			}
			args = append(args, fmt.Sprint(n))
		case float64:
			if n < 0 {
				return "", bad("negative")
			}
			args = append(args, pyFloat(n))
		default:
			return "", bad("arguments must be numbers")
		}
	}
	return strings.TrimPrefix(fn, "locust.") + "(" + strings.Join(args, ", ") + ")", nil
}
