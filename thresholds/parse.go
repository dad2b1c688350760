package thresholds

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Errors of Parse and New.
var (
	// ErrSyntax means an expression that does not follow the grammar.
	ErrSyntax = errors.New("thresholds: bad threshold expression")
	// ErrUnsupported means a threshold the evaluator cannot honour (a
	// dropped-iterations threshold without a dropped count).
	ErrUnsupported = errors.New("thresholds: threshold cannot be evaluated")
)

// Metric is what a threshold measures.
type Metric int

// The metrics.
const (
	// FailRatio is failures / requests (Locust's fail_ratio), 0..1.
	FailRatio Metric = iota + 1
	// Percentile is the P-th percentile of the response times, ms.
	Percentile
	// Avg is the average response time, ms (Locust's avg_response_time).
	Avg
	// RPS is the request rate, requests per second.
	RPS
	// Dropped is the count of arrival-rate iterations that could not start
	// because every user was busy.
	Dropped
)

// Op compares the measured value with the limit; the threshold passes
// when "measured Op limit" holds.
type Op int

// The comparisons.
const (
	Less Op = iota + 1
	LessEq
	Greater
	GreaterEq
)

func (o Op) String() string {
	switch o {
	case Less:
		return "<"
	case LessEq:
		return "<="
	case Greater:
		return ">"
	case GreaterEq:
		return ">="
	}
	return "?"
}

// holds reports whether "v o limit".
func (o Op) holds(v, limit float64) bool {
	switch o {
	case Less:
		return v < limit
	case LessEq:
		return v <= limit
	case Greater:
		return v > limit
	case GreaterEq:
		return v >= limit
	}
	return false
}

// MaxWindow bounds Threshold.Window (and Delay): a window keeps one point
// per evaluation (one a second on a master).
const MaxWindow = time.Hour

// Threshold is one pass/fail criterion.
type Threshold struct {
	Metric Metric
	// P is the percentile of a Percentile threshold, in (0, 1].
	P float64
	// Method and Name select the requests: Name "" means every request
	// (Locust's Aggregated row); Method "" with a Name means every method
	// of that name, merged.
	Method, Name string
	Op           Op
	// Limit is in the metric's unit: ms for Percentile and Avg, a ratio
	// (0..1) for FailRatio, requests per second for RPS, a count for
	// Dropped.
	Limit float64
	// Window, if not zero, evaluates the threshold over the last Window of
	// the run, every evaluation, instead of over the whole run.
	Window time.Duration
	// AbortOnFail stops the run as soon as the threshold fails, once Delay
	// has passed since the test started.
	AbortOnFail bool
	Delay       time.Duration
	// Source says where the threshold was declared ("--threshold 3",
	// "scenario.yaml:12"), for messages.
	Source string
}

// MetricName is the metric as the grammar spells it: fail_ratio, avg,
// rps, dropped, p99, p99.9.
func (t Threshold) MetricName() string {
	switch t.Metric {
	case FailRatio:
		return "fail_ratio"
	case Avg:
		return "avg"
	case RPS:
		return "rps"
	case Dropped:
		return "dropped"
	case Percentile:
		return "p" + strconv.FormatFloat(math.Round(t.P*1e8)/1e6, 'f', -1, 64)
	}
	return "?"
}

// String is the threshold in the command-line grammar; Parse(t.String())
// gives t back (Source aside).
func (t Threshold) String() string {
	var b strings.Builder
	b.WriteString(t.MetricName())
	if t.Name != "" {
		b.WriteByte('{')
		if t.Method != "" {
			b.WriteString(t.Method)
			b.WriteByte(' ')
		}
		b.WriteString(t.Name)
		b.WriteByte('}')
	}
	b.WriteString(t.Op.String())
	b.WriteString(strconv.FormatFloat(t.Limit, 'f', -1, 64))
	if t.Metric == Percentile || t.Metric == Avg {
		b.WriteString("ms")
	}
	if t.Window > 0 {
		b.WriteString(" window=" + t.Window.String())
	}
	if t.AbortOnFail {
		b.WriteString(" abort_on_fail")
		if t.Delay > 0 {
			b.WriteString(" delay=" + t.Delay.String())
		}
	}
	return b.String()
}

// httpMethods are the words Parse takes as the method of a selector
// ("{GET /api}"); any other first word is part of the name.
var httpMethods = map[string]bool{
	"GET": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true,
	"HEAD": true, "OPTIONS": true, "CONNECT": true, "TRACE": true,
}

// Parse reads one threshold in the command-line grammar:
//
//	threshold := metric [ "{" selector "}" ] op limit [ unit ] { " " option }
//	metric    := "fail_ratio" | "avg" | "rps" | "dropped" | "p" N | "p(" N ")"   (0 < N ≤ 100)
//	selector  := [ HTTP-METHOD " " ] name                                         (no "}" in name)
//	op        := "<" | "<=" | ">" | ">="
//	unit      := "ms" | "s" | "us" (avg, pN; default ms) | "%" (fail_ratio)
//	option    := "window=" duration | "abort_on_fail" | "delay=" duration
//
// for example "p99.9<500ms", "fail_ratio<=1%", "avg{GET /api}<200",
// "rps>=100 window=10s", "p(99)<1s abort_on_fail delay=30s". Spaces
// around op are allowed. Errors wrap ErrSyntax and quote the expression.
func Parse(expr string) (Threshold, error) {
	t, err := parse(expr)
	if err != nil {
		return Threshold{}, fmt.Errorf("%w %q: %s", ErrSyntax, expr, err.Error())
	}
	return t, nil
}

// plainError is a parse error without a wrapped sentinel (Parse adds it).
type plainError string

func (e plainError) Error() string { return string(e) }

func errorf(format string, args ...any) error { return plainError(fmt.Sprintf(format, args...)) }

func parse(expr string) (Threshold, error) {
	var t Threshold
	s := strings.TrimSpace(expr)
	if s == "" {
		return t, errorf("empty")
	}
	// The metric: letters, digits, '.', '_', '(', ')' up to '{' or an op.
	i := strings.IndexAny(s, "{<>")
	if i < 0 {
		return t, errorf("no comparison (<, <=, >, >=)")
	}
	if err := t.setMetric(strings.TrimSpace(s[:i])); err != nil {
		return t, err
	}
	s = s[i:]
	if s[0] == '{' {
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return t, errorf("selector without a closing }")
		}
		sel := strings.TrimSpace(s[1:j])
		if sel == "" {
			return t, errorf("empty selector {}")
		}
		if m, rest, ok := strings.Cut(sel, " "); ok && httpMethods[m] && strings.TrimSpace(rest) != "" {
			t.Method, sel = m, strings.TrimSpace(rest)
		}
		t.Name = sel
		s = strings.TrimLeft(s[j+1:], " ")
	}
	switch {
	case strings.HasPrefix(s, "<="):
		t.Op, s = LessEq, s[2:]
	case strings.HasPrefix(s, ">="):
		t.Op, s = GreaterEq, s[2:]
	case strings.HasPrefix(s, "<"):
		t.Op, s = Less, s[1:]
	case strings.HasPrefix(s, ">"):
		t.Op, s = Greater, s[1:]
	default:
		return t, errorf("expected <, <=, > or >= after the metric, found %q", s)
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return t, errorf("no limit after %s", t.Op)
	}
	if err := t.setLimit(fields[0]); err != nil {
		return t, err
	}
	for _, f := range fields[1:] {
		if err := t.setOption(f); err != nil {
			return t, err
		}
	}
	return t, t.check()
}

func (t *Threshold) setMetric(m string) error {
	switch m {
	case "fail_ratio":
		t.Metric = FailRatio
	case "avg":
		t.Metric = Avg
	case "rps":
		t.Metric = RPS
	case "dropped":
		t.Metric = Dropped
	case "":
		return errorf("no metric (fail_ratio, avg, rps, dropped, pN)")
	default:
		if m[0] != 'p' {
			return errorf("unknown metric %q (fail_ratio, avg, rps, dropped, pN such as p99 or p99.9)", m)
		}
		n := m[1:]
		if strings.HasPrefix(n, "(") && strings.HasSuffix(n, ")") {
			n = n[1 : len(n)-1]
		}
		p, err := strconv.ParseFloat(n, 64)
		if err != nil || strings.ContainsAny(n, "eE_xXpP+-") || !(p > 0 && p <= 100) {
			return errorf("bad percentile %q: want p followed by a number above 0 and at most 100 (p99, p99.9, p(95))", m)
		}
		t.Metric, t.P = Percentile, math.Round(p*1e6)/1e8
	}
	return nil
}

func (t *Threshold) setLimit(v string) error {
	num, unit := v, ""
	if k := strings.IndexFunc(v, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') }); k >= 0 {
		num, unit = v[:k], v[k:]
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) {
		return errorf("bad limit %q: want a number, then an optional unit", v)
	}
	switch t.Metric {
	case Percentile, Avg:
		switch unit {
		case "", "ms":
		case "s":
			f *= 1000
		case "us", "µs":
			f /= 1000
		default:
			return errorf("bad unit %q for %s: ms (the default), s or us", unit, t.MetricName())
		}
	case FailRatio:
		switch unit {
		case "":
		case "%":
			f /= 100
		default:
			return errorf("bad unit %q for fail_ratio: a ratio (0.01) or a percentage (1%%)", unit)
		}
		if f > 1 {
			return errorf("fail_ratio limit %v above 1 (write 1%% or 0.01 for one percent)", v)
		}
	case RPS:
		if unit != "" && unit != "/s" {
			return errorf("bad unit %q for rps: none (requests per second)", unit)
		}
	case Dropped:
		if unit != "" {
			return errorf("bad unit %q for dropped: none (a count)", unit)
		}
	}
	t.Limit = f
	return nil
}

func (t *Threshold) setOption(f string) error {
	key, val, hasVal := strings.Cut(f, "=")
	switch key {
	case "abort_on_fail":
		if hasVal {
			b, err := strconv.ParseBool(val)
			if err != nil {
				return errorf("bad abort_on_fail=%q: true or false", val)
			}
			t.AbortOnFail = b
			return nil
		}
		t.AbortOnFail = true
	case "window", "delay":
		d, err := time.ParseDuration(val)
		if !hasVal || err != nil {
			return errorf("bad %s %q: want a duration such as 30s or 1m", key, val)
		}
		if key == "window" {
			t.Window = d
		} else {
			t.Delay = d
		}
	default:
		return errorf("unknown option %q (window=, abort_on_fail, delay=)", f)
	}
	return nil
}

// check validates a threshold from any source (Parse, a scenario file).
func (t *Threshold) check() error {
	switch t.Metric {
	case FailRatio, Avg, RPS, Dropped:
	case Percentile:
		if !(t.P > 0 && t.P <= 1) {
			return errorf("percentile %v outside (0, 100]", t.P*100)
		}
	default:
		return errorf("no metric")
	}
	if t.Op < Less || t.Op > GreaterEq {
		return errorf("no comparison")
	}
	if math.IsNaN(t.Limit) || math.IsInf(t.Limit, 0) || t.Limit < 0 {
		return errorf("limit %v: want a number of at least 0", t.Limit)
	}
	if t.Window < 0 || t.Window > MaxWindow || (t.Window > 0 && t.Window < time.Second) {
		return errorf("window %v outside 1s..%v", t.Window, MaxWindow)
	}
	if t.Delay < 0 || t.Delay > MaxWindow {
		return errorf("delay %v outside 0..%v", t.Delay, MaxWindow)
	}
	if t.Delay > 0 && !t.AbortOnFail {
		return errorf("delay without abort_on_fail (the delay only postpones the abort)")
	}
	if t.Method != "" && t.Name == "" {
		return errorf("a method without a request name")
	}
	return nil
}

// Check validates a threshold built by hand or read from a file (Parse
// checks its own). Errors wrap ErrSyntax.
func (t Threshold) Check() error {
	if err := t.check(); err != nil {
		return fmt.Errorf("%w: %s", ErrSyntax, err.Error())
	}
	return nil
}
