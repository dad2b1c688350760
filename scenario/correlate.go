package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// dynRequest is what a request reads or writes at run time: its
// templates, extended checks and captures.
type dynRequest struct {
	path     template
	headers  []dynHeader // nil when every header is fixed (req.Headers)
	body     *template   // nil when the body is fixed (req.Body)
	bodyEsc  escaper
	checks   *extChecks
	captures []capture
}

type dynHeader struct {
	key string
	val template
}

// slotOf resolves user variable names of the class being read.
func (p *parser) slotOf() slotFunc {
	if p.cls == nil {
		return nil
	}
	return p.cls.slot
}

// expandStatic expands environment variables in a field read at load;
// a user variable there is an error.
func (p *parser) expandStatic(s string) (string, error) {
	t, err := compileTemplate(s, p.lookup, p.slotOf())
	if err != nil {
		return "", err
	}
	if !t.static {
		return "", fmt.Errorf("%q reads a user variable, which this field cannot: variables are read at run time in path, headers, body, json and checks only", s)
	}
	return t.text, nil
}

// tmpl compiles a scalar that may read user variables at run time.
func (p *parser) tmpl(n *yaml.Node, field string) (template, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return template{}, p.errf(n, field, "must be a string, not %s", kindName(n))
	}
	t, err := compileTemplate(n.Value, p.lookup, p.slotOf())
	if err != nil {
		return template{}, p.errf(n, field, "%v", err)
	}
	return t, nil
}

// headersT reads headers whose values may read user variables.
func (p *parser) headersT(n *yaml.Node, path string) ([]httpc.Header, []template, error) {
	var hs []httpc.Header
	var ts []template
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		t, err := p.tmpl(v, field)
		if err != nil {
			return err
		}
		k, err := p.expandStatic(key)
		if err != nil {
			return p.errf(v, field, "%v", err)
		}
		hs = append(hs, httpc.Header{Key: k, Value: t.text})
		ts = append(ts, t)
		return nil
	})
	return hs, ts, err
}

// jsonPlaceholder marks a string with user variables inside the encoded
// JSON body; it cannot come from YAML text (json.Marshal escapes NUL).
const jsonPlaceholder = "\x00cicada-template-"

// jsonBody compiles a json: body. String values may read user variables;
// their values are JSON-escaped at run time. Keys are read at load.
func (p *parser) jsonBody(n *yaml.Node, field string) (*template, error) {
	var ts []template
	val, err := p.plainT(n, field, &ts)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(val)
	if err != nil {
		return nil, p.errf(n, field, "cannot encode as JSON: %v", err)
	}
	if len(ts) == 0 {
		return &template{text: string(b), static: true}, nil
	}
	enc := string(b)
	var out template
	var text []byte // the body with each template as written, for Request.HTTP.Body
	for i, t := range ts {
		ph, _ := json.Marshal(jsonPlaceholder + strconv.Itoa(i))
		at := strings.Index(enc, string(ph))
		if at < 0 {
			return nil, p.errf(n, field, "internal error: template %d not found in the JSON body", i)
		}
		out.segs = append(out.segs, segment{lit: enc[:at] + `"`, slot: -1})
		text = append(append(append(append(text, enc[:at]...), '"'), appendJSONString(nil, t.text)...), '"')
		for _, s := range t.segs {
			if s.slot < 0 {
				s.lit = string(appendJSONString(nil, s.lit))
			}
			out.segs = append(out.segs, s)
		}
		out.segs = append(out.segs, segment{lit: `"`, slot: -1})
		enc = enc[at+len(ph):]
	}
	out.segs = append(out.segs, segment{lit: enc, slot: -1})
	out.text = string(append(text, enc...))
	return &out, nil
}

// plainT is plain with templates: a string reading user variables becomes
// a placeholder, its template appended to ts.
func (p *parser) plainT(n *yaml.Node, field string, ts *[]template) (any, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!str" {
			return p.plain(n, field)
		}
		t, err := p.tmpl(n, field)
		if err != nil {
			return nil, err
		}
		if t.static {
			return t.text, nil
		}
		*ts = append(*ts, t)
		return jsonPlaceholder + strconv.Itoa(len(*ts)-1), nil
	case yaml.SequenceNode:
		out := []any{}
		for i, c := range n.Content {
			v, err := p.plainT(c, fmt.Sprintf("%s[%d]", field, i), ts)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		// json.Marshal sorts keys: the placeholders are numbered in the
		// order they are met here, which must be the encoded order.
		keys := make([]string, 0, len(n.Content)/2)
		vals := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := p.str(n.Content[i], field)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
			vals[k] = n.Content[i+1]
		}
		slices.Sort(keys)
		out := map[string]any{}
		for _, k := range keys {
			v, err := p.plainT(vals[k], field+"."+k, ts)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return p.plain(n, field)
}

// bodyContains reads checks.body_contains: fixed strings go to Expect,
// ones with user variables to the extended checks.
func (p *parser) bodyContains(n *yaml.Node, field string, e *worker.Expect, r *request) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for i, it := range items {
		f := field
		if n.Kind == yaml.SequenceNode {
			f = fmt.Sprintf("%s[%d]", field, i)
		}
		t, err := p.tmpl(it, f)
		if err != nil {
			return err
		}
		if t.static {
			e.BodyContains = append(e.BodyContains, t.text)
			continue
		}
		x := r.extChecks()
		x.bodyContains = append(x.bodyContains, t)
	}
	return nil
}

func (r *request) extChecks() *extChecks {
	if r.ext == nil {
		r.ext = &extChecks{}
	}
	return r.ext
}

// extCheck reads the checks beyond status, body_contains and
// max_response_time.
func (p *parser) extCheck(key string, v *yaml.Node, field string, r *request) error {
	switch key {
	case "json":
		x := r.extChecks()
		return p.fields(v, field, func(k string, val *yaml.Node, f string) error {
			jp, err := p.jsonPath(k, val, f)
			if err != nil {
				return err
			}
			c := jsonCheck{path: jp}
			if val.Kind == yaml.ScalarNode && val.Tag == "!!str" {
				t, err := p.tmpl(val, f)
				if err != nil {
					return err
				}
				if t.static {
					c.want = t.text
				} else {
					c.tmpl = &t
				}
			} else {
				c.want, err = p.plain(val, f)
				if err != nil {
					return err
				}
			}
			x.json = append(x.json, c)
			return nil
		})
	case "json_exists":
		ss, err := p.strOrList(v, field)
		if err != nil {
			return err
		}
		x := r.extChecks()
		for _, s := range ss {
			jp, err := p.jsonPath(s, v, field)
			if err != nil {
				return err
			}
			x.jsonExists = append(x.jsonExists, jp)
		}
	case "regex":
		ss, err := p.strOrList(v, field)
		if err != nil {
			return err
		}
		x := r.extChecks()
		for _, s := range ss {
			re, err := regexp.Compile(s)
			if err != nil {
				return p.errf(v, field, "invalid regular expression %q: %v", s, err)
			}
			x.regex = append(x.regex, re)
		}
	case "headers":
		x := r.extChecks()
		return p.fields(v, field, func(k string, val *yaml.Node, f string) error {
			t, err := p.tmpl(val, f)
			if err != nil {
				return err
			}
			x.headers = append(x.headers, headerCheck{key: k, want: t})
			return nil
		})
	case "headers_exist":
		ss, err := p.strOrList(v, field)
		if err != nil {
			return err
		}
		x := r.extChecks()
		x.headersExist = append(x.headersExist, ss...)
	default:
		return errUnknown
	}
	return nil
}

func (p *parser) jsonPath(s string, n *yaml.Node, field string) (jsonPath, error) {
	jp, err := parseJSONPath(s)
	if err != nil {
		return jp, p.errf(n, field, "%v", err)
	}
	return jp, nil
}

// captures reads a request's capture: name → one source.
func (p *parser) captures(n *yaml.Node, path string, r *request) error {
	return p.fields(n, path, func(name string, v *yaml.Node, field string) error {
		if !validVar(name) {
			return p.errf(v, field, "%q is not a variable name (letters, digits, _; not starting with a digit)", name)
		}
		slot, ok := p.slotOf()(name)
		if !ok {
			return p.errf(v, field, "internal error: capture %q not declared", name)
		}
		c := capture{name: name, slot: slot}
		sources := 0
		err := p.fields(v, field, func(key string, val *yaml.Node, f string) error {
			var err error
			switch key {
			case "json":
				var s string
				if s, err = p.str(val, f); err == nil {
					c.path, err = p.jsonPath(s, val, f)
				}
				c.kind, sources = capJSON, sources+1
			case "regex":
				var s string
				if s, err = p.str(val, f); err == nil {
					c.re, err = regexp.Compile(s)
					if err != nil {
						err = p.errf(val, f, "invalid regular expression %q: %v", s, err)
					} else if c.re.NumSubexp() > 1 {
						err = p.errf(val, f, "%q has %d groups: a capture takes the first group, give one (or none for the whole match)", s, c.re.NumSubexp())
					}
				}
				c.kind, sources = capRegex, sources+1
			case "header":
				c.key, err = p.str(val, f)
				c.kind, sources = capHeader, sources+1
			case "cookie":
				c.key, err = p.str(val, f)
				c.kind, sources = capCookie, sources+1
			case "status":
				var b bool
				if b, err = p.bool_(val, f); err == nil && !b {
					err = p.errf(val, f, "status: true is the only form")
				}
				c.kind, sources = capStatus, sources+1
			case "default":
				c.def, err = p.str(val, f)
				c.hasDef = true
			default:
				return errUnknown
			}
			return err
		})
		if err != nil {
			return err
		}
		if sources != 1 {
			return p.errf(v, field, "a capture needs exactly one source of %s (it has %d)", strings.Join(captureKinds, ", "), sources)
		}
		r.caps = append(r.caps, c)
		return nil
	})
}

// finishDynamic decides whether r is a fixed request or one read at run
// time, and says why in req.Dynamic for runtimes that send data.
func (p *parser) finishDynamic(r *request) error {
	d := &dynRequest{path: r.pathT, checks: r.ext, captures: r.caps}
	var why []string
	if !r.pathT.static {
		why = append(why, "path "+strconv.Quote(r.pathT.text))
		if r.req.Name == "" {
			// One stats row per path template, not one per value.
			r.req.Name = r.pathT.text
		}
	}
	for i, t := range r.hdrT {
		if !t.static {
			if d.headers == nil {
				why = append(why, "header "+r.req.Headers[i].Key)
			}
			d.headers = make([]dynHeader, len(r.hdrT))
			for j := range r.hdrT {
				d.headers[j] = dynHeader{key: r.req.Headers[j].Key, val: r.hdrT[j]}
			}
		}
	}
	if r.bodyT != nil && !r.bodyT.static {
		d.body, d.bodyEsc = r.bodyT, appendRaw
		if r.json {
			d.bodyEsc = appendJSONString
		}
		why = append(why, "body")
	}
	if r.ext != nil {
		why = append(why, "checks beyond status")
	}
	if len(r.caps) > 0 {
		why = append(why, "capture")
	}
	if len(why) == 0 {
		return nil
	}
	r.dyn = d
	r.why = "reads or writes user variables or checks the body (" + strings.Join(why, ", ") + ")"
	if r.ext != nil && len(why) == 1 {
		r.why = "checks beyond status (json, regex, headers)"
	}
	return nil
}

// feedList reads the top-level feeds.
func (p *parser) feedList(n *yaml.Node, path string) error {
	p.feeds = map[string]*feed{}
	return p.list(n, path, func(i int, item *yaml.Node, field string) error {
		f := &feed{}
		var fileNode *yaml.Node
		modeSet, exSet := false, false
		err := p.fields(item, field, func(key string, v *yaml.Node, fl string) error {
			var err error
			var s string
			switch key {
			case "name":
				f.name, err = p.str(v, fl)
				if err == nil && !validVar(f.name) {
					err = p.errf(v, fl, "%q is not a name (letters, digits, _; not starting with a digit)", f.name)
				}
			case "file":
				fileNode = v
				f.file, err = p.str(v, fl)
			case "mode":
				s, err = p.str(v, fl)
				modeSet = true
				switch s {
				case "sequential":
					f.mode = modeSequential
				case "random":
					f.mode = modeRandom
				case "unique":
					f.mode = modeUnique
				default:
					if err == nil {
						err = p.errf(v, fl, "%q is not sequential, random or unique", s)
					}
				}
			case "on_exhausted":
				s, err = p.str(v, fl)
				exSet = true
				switch s {
				case "stop":
					f.exhausted = exhaustStop
				case "recycle":
					f.exhausted = exhaustRecycle
				case "fail":
					f.exhausted = exhaustFail
				default:
					if err == nil {
						err = p.errf(v, fl, "%q is not stop, recycle or fail", s)
					}
				}
			default:
				return errUnknown
			}
			return err
		})
		if err != nil {
			return err
		}
		switch {
		case f.name == "":
			return p.errf(item, field+".name", "missing: a feed needs a name")
		case fileNode == nil || f.file == "":
			return p.errf(item, field+".file", "missing: a feed needs a file (.csv or .jsonl)")
		case p.feeds[f.name] != nil:
			return p.errf(item, field+".name", "duplicate feed %q", f.name)
		case !modeSet:
			f.mode = modeSequential
		}
		if f.mode == modeRandom && exSet {
			return p.errf(item, field+".on_exhausted", "a random feed is never exhausted: remove on_exhausted")
		}
		if f.mode == modeUnique && !exSet {
			f.exhausted = exhaustStop
		}
		file := f.file
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(p.file), file)
		}
		f.file = file
		f.columns, f.rows, f.digest, err = loadFeed(file)
		if err != nil {
			return p.errf(fileNode, field+".file", "%v", err)
		}
		p.feeds[f.name] = f
		return nil
	})
}

// classContext reads a user class's variables and feed and declares the
// names its captures set, before its requests are read.
func (p *parser) classContext(n *yaml.Node, path string) (*classCtx, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, path, "must be a mapping, not %s", kindName(n))
	}
	cc := newClassCtx("")
	var varsNode, feedNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "name":
			cc.name = n.Content[i+1].Value
		case "variables":
			varsNode = n.Content[i+1]
		case "feed":
			feedNode = n.Content[i+1]
		}
	}
	if feedNode != nil {
		if err := p.classFeed(cc, feedNode, path+".feed"); err != nil {
			return nil, err
		}
	}
	if varsNode != nil {
		err := p.fields(varsNode, path+".variables", func(name string, v *yaml.Node, field string) error {
			if !validVar(name) {
				return p.errf(v, field, "%q is not a variable name (letters, digits, _; not starting with a digit)", name)
			}
			slot, fresh := cc.declare(name)
			if !fresh {
				return p.errf(v, field, "variable %q is also a column of the feed %q", name, cc.feed.name)
			}
			v, each, err := p.each(v, field)
			if err != nil {
				return err
			}
			gen, err := p.generator(v, field)
			if err != nil {
				return err
			}
			d := varDef{slot: slot, gen: gen, each: each}
			cc.vars = append(cc.vars, d)
			if each {
				cc.eachVars = append(cc.eachVars, d)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	scanCaptures(n, cc)
	return cc, nil
}

// classFeed reads a class's feed: a name, or {name, take: start|task}.
func (p *parser) classFeed(cc *classCtx, n *yaml.Node, field string) error {
	var name string
	if n.Kind == yaml.ScalarNode {
		var err error
		if name, err = p.str(n, field); err != nil {
			return err
		}
	} else {
		err := p.fields(n, field, func(key string, v *yaml.Node, f string) error {
			var err error
			switch key {
			case "name":
				name, err = p.str(v, f)
			case "take":
				var s string
				s, err = p.str(v, f)
				switch s {
				case "start":
				case "task":
					cc.feedEach = true
				default:
					if err == nil {
						err = p.errf(v, f, "%q is not start (a row when the user starts) or task (a new row before every task)", s)
					}
				}
			default:
				return errUnknown
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	f := p.feeds[name]
	if f == nil {
		return p.errf(n, field, "no feed %q in the scenario's feeds", name)
	}
	cc.feed = f
	for _, col := range f.columns {
		a, _ := cc.declare(col)
		b, _ := cc.declare(f.name + "." + col)
		cc.feedSlots = append(cc.feedSlots, [2]int{a, b})
	}
	return nil
}

// each splits a variable's `each:` off its generator: {random_int: [1,
// 6], each: request} draws a new value before each request of the user
// (as a Python task calling random.randint does), instead of once when
// the user starts (each: user, the default).
func (p *parser) each(n *yaml.Node, field string) (*yaml.Node, bool, error) {
	if n.Kind != yaml.MappingNode {
		return n, false, nil
	}
	var rest []*yaml.Node
	each := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "each" {
			rest = append(rest, n.Content[i], n.Content[i+1])
			continue
		}
		switch v := n.Content[i+1]; v.Value {
		case "request":
			each = true
		case "user":
		default:
			return nil, false, p.errf(v, field+".each", "%q is not request (a new value before each request) or user (one per user, the default)", v.Value)
		}
	}
	if !each && len(rest) == len(n.Content) {
		return n, false, nil
	}
	m := *n
	m.Content = rest
	return &m, each, nil
}

// generator reads a variable's value: a string (environment variables
// expanded) or one generator.
func (p *parser) generator(n *yaml.Node, field string) (func(*worker.User) string, error) {
	if n.Kind == yaml.ScalarNode {
		s, err := p.str(n, field)
		return genConst(s), err
	}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return nil, p.errf(n, field, "must be a string or one generator (counter, random_int, random_choice, random_string, uuid, user_index, worker_index, now)")
	}
	key, v, f := n.Content[0].Value, n.Content[1], field+"."+n.Content[0].Value
	switch key {
	case "counter":
		start, step := int64(0), int64(1)
		if v.Kind == yaml.MappingNode {
			err := p.fields(v, f, func(k string, val *yaml.Node, ff string) error {
				x, err := p.int_(val, ff, math.MinInt)
				switch k {
				case "start":
					start = int64(x)
				case "step":
					step = int64(x)
				default:
					return errUnknown
				}
				return err
			})
			if err != nil {
				return nil, err
			}
		} else if ok, err := p.bool_(v, f); err != nil || !ok {
			return nil, p.errf(v, f, "counter is {start: N, step: M} or true")
		}
		return genCounter(start, step), nil
	case "random_int":
		if v.Kind != yaml.SequenceNode || len(v.Content) != 2 {
			return nil, p.errf(v, f, "random_int is [min, max]")
		}
		lo, err := p.int_(v.Content[0], f+"[0]", math.MinInt)
		if err != nil {
			return nil, err
		}
		hi, err := p.int_(v.Content[1], f+"[1]", lo)
		if err != nil {
			return nil, err
		}
		return genRandomInt(int64(lo), int64(hi)), nil
	case "random_choice":
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 || len(v.Content) > 10000 {
			return nil, p.errf(v, f, "random_choice is a list of 1 to 10,000 values")
		}
		vals := make([]string, len(v.Content))
		for i, c := range v.Content {
			s, err := p.str(c, fmt.Sprintf("%s[%d]", f, i))
			if err != nil {
				return nil, err
			}
			vals[i] = s
		}
		return genRandomChoice(vals), nil
	case "random_string":
		k, err := p.int_(v, f, 1)
		if err == nil && k > 4096 {
			err = p.errf(v, f, "at most 4096 characters, not %d", k)
		}
		if err != nil {
			return nil, err
		}
		return genRandomString(k), nil
	case "uuid", "user_index", "worker_index":
		ok, err := p.bool_(v, f)
		if err != nil || !ok {
			return nil, p.errf(v, f, "%s: true is the only form", key)
		}
		switch key {
		case "uuid":
			return genUUID, nil
		case "user_index":
			return genUserIndex, nil
		}
		return genWorkerIndex, nil
	case "now":
		s, err := p.str(v, f)
		if err != nil {
			return nil, err
		}
		switch s {
		case "unix", "unix_ms", "rfc3339":
			return genNow(s), nil
		}
		return nil, p.errf(v, f, "%q is not unix, unix_ms or rfc3339", s)
	}
	return nil, p.errf(n.Content[0], f, "unknown generator %q (counter, random_int, random_choice, random_string, uuid, user_index, worker_index, now)", key)
}

// scanCaptures declares the names captured by the requests of a class
// (on_start, on_stop, tasks and their requests).
func scanCaptures(n *yaml.Node, cc *classCtx) {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return
	}
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			scanCaptures(c, cc)
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		switch k {
		case "capture":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					if name := v.Content[j].Value; validVar(name) {
						cc.declare(name)
					}
				}
			}
		case "tasks", "on_start", "on_stop", "requests":
			scanCaptures(v, cc)
		}
	}
}

// classRuntime gives a class with variables, captures, extended checks or
// a feed its task functions and reports true; a class without any is left
// to the functions of fixed requests (worker.RequestsFunc).
func classRuntime(uc *worker.UserClass, cc *classCtx, onStart, onStop []*request) bool {
	tasks := cc.tasks
	used := len(cc.names) > 0
	for _, reqs := range append(slices.Clone(tasks), onStart, onStop) {
		for _, r := range reqs {
			used = used || r.dyn != nil
		}
	}
	if !used {
		return false
	}
	why := ""
	if len(cc.vars) > 0 || cc.feed != nil {
		why = fmt.Sprintf("user class %q has variables or a feed", uc.Name)
	}
	mark := func(rs []worker.Request) []worker.Request {
		for i := range rs {
			if rs[i].Dynamic == "" {
				rs[i].Dynamic = why
			}
		}
		return rs
	}
	for i := range uc.Tasks {
		mark(uc.Tasks[i].Requests)
		if tasks[i] == nil || uc.Tasks[i].Parallel {
			continue // a socket task, or fixed requests sent at once: their own Fn
		}
		uc.Tasks[i].Fn = cc.run(tasks[i], runTask)
	}
	if onStart != nil {
		uc.OnStartRequests = mark(asRequests(onStart))
		uc.OnStart = cc.run(onStart, runStart)
	}
	if onStop != nil {
		uc.OnStopRequests = mark(asRequests(onStop))
		uc.OnStop = cc.run(onStop, runStop)
	}
	return true
}
