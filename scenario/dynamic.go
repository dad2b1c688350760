package scenario

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// classCtx is a user class's variables: the names its templates read
// (variables, captures, feed columns) as slots of each user's values.
type classCtx struct {
	name  string
	slots map[string]int
	names []string
	vars  []varDef
	// eachVars are the vars with each: request.
	eachVars []varDef
	feed     *feed
	// feedEach: take a new row before every task (take: task), not only
	// when the user starts.
	feedEach  bool
	feedSlots [][2]int // column index → slot of "col" and of "feed.col" (-1: none)
	// tasks are the class's compiled requests, task by task (while read)
	tasks [][]*request
}

// varDef is one entry of a class's variables.
type varDef struct {
	slot int
	gen  func(u *worker.User) string
	each bool // each: request: drawn again before each request
}

func newClassCtx(name string) *classCtx {
	return &classCtx{name: name, slots: map[string]int{}}
}

// declare adds a user variable name; false if it exists.
func (cc *classCtx) declare(name string) (int, bool) {
	if k, ok := cc.slots[name]; ok {
		return k, false
	}
	k := len(cc.names)
	cc.slots[name] = k
	cc.names = append(cc.names, name)
	return k, true
}

func (cc *classCtx) slot(name string) (int, bool) {
	k, ok := cc.slots[name]
	return k, ok
}

// userState is a user's variables and the scratch space of its requests
// (kept in worker.User.Data).
type userState struct {
	cls  *classCtx
	vals []string

	req  httpc.Request
	buf  []byte
	body []byte
	hdrs []httpc.Header
	cur  *request // the request in flight, for Check

	valid int8 // the response is JSON: 0 not known yet, 1 yes, -1 no
}

// state returns u's state, creating it (with its variables' values and a
// first feed row) on first use.
func (cc *classCtx) state(ctx context.Context, u *worker.User) (*userState, error) {
	if st, ok := u.Data.(*userState); ok && st.cls == cc {
		return st, nil
	}
	st := &userState{cls: cc, vals: make([]string, len(cc.names))}
	for _, v := range cc.vars {
		st.vals[v.slot] = v.gen(u)
	}
	u.Data = st
	if cc.feed != nil {
		if err := st.takeRow(ctx, u); err != nil {
			u.Data = nil
			return nil, err
		}
	}
	return st, nil
}

// takeRow fills the feed's columns with a new row.
func (st *userState) takeRow(ctx context.Context, u *worker.User) error {
	f := st.cls.feed
	i, err := f.take(ctx, u)
	if err != nil {
		return err
	}
	for c, v := range f.rows[i] {
		if c >= len(st.cls.feedSlots) {
			break
		}
		s := st.cls.feedSlots[c]
		if s[0] >= 0 {
			st.vals[s[0]] = v
		}
		if s[1] >= 0 {
			st.vals[s[1]] = v
		}
	}
	return nil
}

// feedStop turns a feed error into the user's end: a stop for an
// exhausted feed with on_exhausted stop; else a failure in the stats
// (method FEED, the feed's name) and a stop. ctx errors pass through.
func (cc *classCtx) feedStop(ctx context.Context, u *worker.User, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, ErrFeedExhausted) && cc.feed.exhausted == exhaustStop {
		return worker.ErrStopUser
	}
	u.Record("FEED", cc.feed.name, 0, 0, err)
	if !errors.Is(err, ErrFeedExhausted) && !cc.feed.logged.Swap(true) {
		u.Logger().Error(err.Error()+"; every user that needs a row records this failure and stops", "class", cc.name)
	}
	return worker.ErrStopUser
}

// What a request list of a class is.
const (
	runTask uint8 = iota
	runStart
	runStop
)

// run sends reqs in order, as worker.RequestsFunc does, fixed requests
// as data and the others from the user's variables. on_stop does not run
// for a user that has no variables (it could not take a feed row).
func (cc *classCtx) run(reqs []*request, kind uint8) worker.TaskFunc {
	return func(ctx context.Context, u *worker.User) error {
		fresh := false
		if _, ok := u.Data.(*userState); !ok {
			if kind == runStop {
				return nil
			}
			fresh = true
		}
		st, err := cc.state(ctx, u)
		if err != nil {
			return cc.feedStop(ctx, u, err)
		}
		if cc.feedEach && kind == runTask && !fresh {
			if err := st.takeRow(ctx, u); err != nil {
				return cc.feedStop(ctx, u, err)
			}
		}
		for _, r := range reqs {
			if r.dyn == nil {
				err = u.DoDiscard(ctx, &r.req, r.expect)
			} else {
				err = st.do(ctx, u, r)
			}
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, worker.ErrNoHost) || errors.Is(err, httpc.ErrInvalidURL) {
				return err // a configuration problem: reported as an exception
			}
		}
		return nil
	}
}

// do builds r from the user's values and sends it.
func (st *userState) do(ctx context.Context, u *worker.User, r *request) error {
	d := r.dyn
	for _, v := range st.cls.eachVars {
		st.vals[v.slot] = v.gen(u)
	}
	vals := st.vals
	st.req = r.req // method, name and the fixed parts
	if !d.path.static {
		st.buf = d.path.appendTo(st.buf[:0], vals, appendRaw)
		st.req.Path = string(st.buf)
	}
	if d.headers != nil {
		st.hdrs = st.hdrs[:0]
		for i := range d.headers {
			h := &d.headers[i]
			v := h.val.text
			if !h.val.static {
				st.buf = h.val.appendTo(st.buf[:0], vals, appendRaw)
				v = string(st.buf)
			}
			st.hdrs = append(st.hdrs, httpc.Header{Key: h.key, Value: v})
		}
		st.req.Headers = st.hdrs
	}
	if d.body != nil && !d.body.static {
		// The user's own buffer: its requests are sent one at a time
		// (a second round resends the last one, built last).
		st.body = d.body.appendTo(st.body[:0], vals, d.bodyEsc)
		st.req.Body = st.body
	}
	st.cur, st.valid = r, 0
	err := u.DoCheck(ctx, &st.req, st)
	st.cur = nil
	return err
}

// Check implements worker.Checker for the request in flight: the fixed
// checks, then the extended ones, then the captures.
func (st *userState) Check(resp *httpc.Response, req *httpc.Request) error {
	r := st.cur
	if err := r.expect.Check(resp, req); err != nil {
		return err
	}
	if r.dyn.checks != nil {
		if msg := r.dyn.checks.run(st, resp); msg != "" {
			return &worker.CheckError{Msg: msg}
		}
	}
	for i := range r.dyn.captures {
		if msg := r.dyn.captures[i].apply(st, resp); msg != "" {
			return &worker.CheckError{Msg: msg}
		}
	}
	return nil
}

// errNotJSON is the failure of a JSON path on a body that is not JSON.
var errNotJSON = errors.New("response is not JSON")

// jsonFind returns the raw value at p in the response (checked to be JSON
// once per response), without decoding it.
func (st *userState) jsonFind(resp *httpc.Response, p *jsonPath) ([]byte, bool, error) {
	if st.valid == 0 {
		st.valid = -1
		if json.Valid(resp.Body) {
			st.valid = 1
		}
	}
	if st.valid < 0 {
		return nil, false, errNotJSON
	}
	raw, ok := p.find(resp.Body)
	return raw, ok, nil
}

// captureKind is where a capture reads its value.
type captureKind uint8

const (
	capJSON captureKind = iota
	capRegex
	capHeader
	capCookie
	capStatus
)

var captureKinds = []string{"json", "regex", "header", "cookie", "status"}

// capture copies one value of a response into a user variable.
type capture struct {
	name   string
	slot   int
	kind   captureKind
	path   jsonPath
	re     *regexp.Regexp
	key    string // header or cookie name
	def    string
	hasDef bool
}

// apply sets the variable, or returns the failure when the value is
// absent and there is no default.
func (c *capture) apply(st *userState, resp *httpc.Response) string {
	v, why := c.value(st, resp)
	switch {
	case why == "":
	case c.hasDef:
		v = c.def
	default:
		return "capture " + c.name + ": " + why
	}
	st.vals[c.slot] = v
	return ""
}

func (c *capture) value(st *userState, resp *httpc.Response) (string, string) {
	switch c.kind {
	case capJSON:
		raw, ok, err := st.jsonFind(resp, &c.path)
		if err != nil {
			return "", err.Error()
		}
		if !ok {
			return "", "JSON path " + c.path.text + " not found"
		}
		return rawText(raw), ""
	case capRegex:
		m := c.re.FindSubmatchIndex(resp.Body)
		if m == nil {
			return "", "regex " + strconv.Quote(c.re.String()) + " does not match"
		}
		if len(m) >= 4 {
			if m[2] < 0 {
				return "", "regex " + strconv.Quote(c.re.String()) + ": the group did not take part in the match"
			}
			return string(resp.Body[m[2]:m[3]]), ""
		}
		return string(resp.Body[m[0]:m[1]]), ""
	case capHeader:
		if v, ok := resp.Lookup(c.key); ok {
			return v, ""
		}
		return "", "header " + c.key + " absent"
	case capCookie:
		for _, h := range resp.Headers() {
			if http.CanonicalHeaderKey(h.Key) != "Set-Cookie" {
				continue
			}
			if ck, err := http.ParseSetCookie(h.Value); err == nil && ck.Name == c.key {
				return ck.Value, ""
			}
		}
		return "", "cookie " + c.key + " not set by the response"
	default:
		return strconv.Itoa(resp.StatusCode), ""
	}
}

// extChecks are the checks beyond Expect's.
type extChecks struct {
	bodyContains []template // with variables (fixed ones are in Expect)
	json         []jsonCheck
	jsonExists   []jsonPath
	regex        []*regexp.Regexp
	headers      []headerCheck
	headersExist []string
}

type jsonCheck struct {
	path jsonPath
	want any       // a plain YAML value
	tmpl *template // a string with variables: compared as a string
}

type headerCheck struct {
	key  string
	want template
}

// run returns the failure message of the first check that fails, or "".
func (x *extChecks) run(st *userState, resp *httpc.Response) string {
	for i := range x.bodyContains {
		var s string
		s, st.buf = x.bodyContains[i].value(st.vals, st.buf)
		if !containsStr(resp.Body, s) {
			return fmt.Sprintf("check body_contains %s: response body does not contain %q", x.bodyContains[i].text, s)
		}
	}
	for i := range x.json {
		c := &x.json[i]
		raw, ok, err := st.jsonFind(resp, &c.path)
		if err != nil {
			return "check json " + c.path.text + ": " + err.Error()
		}
		if !ok {
			return "check json " + c.path.text + ": absent"
		}
		if c.tmpl != nil {
			var want string
			want, st.buf = c.tmpl.value(st.vals, st.buf)
			if raw[0] != '"' || rawText(raw) != want {
				return fmt.Sprintf("check json %s: got %s, want %s", c.path.text, rawRepr(raw), jsonRepr(want))
			}
			continue
		}
		got, err := decodeJSON(raw)
		if err != nil || !jsonEqual(got, c.want) {
			return fmt.Sprintf("check json %s: got %s, want %s", c.path.text, rawRepr(raw), jsonRepr(c.want))
		}
	}
	for i := range x.jsonExists {
		p := &x.jsonExists[i]
		_, ok, err := st.jsonFind(resp, p)
		if err != nil {
			return "check json_exists " + p.text + ": " + err.Error()
		}
		if !ok {
			return "check json_exists " + p.text + ": absent"
		}
	}
	for _, re := range x.regex {
		if !re.Match(resp.Body) {
			return "check regex " + strconv.Quote(re.String()) + ": no match in the response body"
		}
	}
	for i := range x.headers {
		h := &x.headers[i]
		var want string
		want, st.buf = h.want.value(st.vals, st.buf)
		got, ok := header(resp, h.key)
		if !ok {
			return fmt.Sprintf("check headers %s: absent, want %q", h.key, want)
		}
		if got != want {
			return fmt.Sprintf("check headers %s: got %q, want %q", h.key, got, want)
		}
	}
	for _, k := range x.headersExist {
		if _, ok := header(resp, k); !ok {
			return "check headers_exist " + k + ": absent"
		}
	}
	return ""
}

func header(resp *httpc.Response, key string) (string, bool) { return resp.Lookup(key) }

func containsStr(b []byte, s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i+len(s) <= len(b); i++ {
		if b[i] == s[0] && string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// Generators of variables.

func genConst(s string) func(*worker.User) string {
	return func(*worker.User) string { return s }
}

func genCounter(start, step int64) func(*worker.User) string {
	var n atomic.Int64
	return func(*worker.User) string {
		return strconv.FormatInt(start+step*(n.Add(1)-1), 10)
	}
}

func genRandomInt(lo, hi int64) func(*worker.User) string {
	return func(*worker.User) string {
		return strconv.FormatInt(lo+mrand.Int64N(hi-lo+1), 10)
	}
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func genRandomChoice(vals []string) func(*worker.User) string {
	return func(*worker.User) string { return vals[mrand.IntN(len(vals))] }
}

func genRandomString(n int) func(*worker.User) string {
	return func(*worker.User) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alnum[mrand.IntN(len(alnum))]
		}
		return string(b)
	}
}

func genUUID(*worker.User) string { return newUUID() }

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

func genUserIndex(u *worker.User) string { return strconv.FormatInt(u.Index(), 10) }

func genWorkerIndex(u *worker.User) string {
	if w := u.Worker(); w != nil {
		return strconv.FormatInt(w.Index(), 10)
	}
	return "0"
}

func genNow(format string) func(*worker.User) string {
	return func(*worker.User) string {
		t := time.Now()
		switch format {
		case "unix":
			return strconv.FormatInt(t.Unix(), 10)
		case "unix_ms":
			return strconv.FormatInt(t.UnixMilli(), 10)
		default:
			return t.UTC().Format(time.RFC3339)
		}
	}
}
