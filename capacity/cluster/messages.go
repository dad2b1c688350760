package cluster

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
)

// Custom message types of the bench exchange (see the package doc).
const (
	TypeHello  = "cicada_bench_hello"
	TypeReady  = "cicada_bench_ready"
	TypeTrial  = "cicada_bench_trial"
	TypeHeld   = "cicada_bench_held"
	TypeGo     = "cicada_bench_go"
	TypeResult = "cicada_bench_result"
	TypeAbort  = "cicada_bench_abort"
)

// Version is the bench exchange's version, sent in hello and ready; a
// worker answering another version is refused. Version 2 added HTTPS,
// traffic mixes and the generator strain (variants.go): a version 1 worker
// would run an HTTPS or mix trial as plain HTTP.
const Version = 2

// Bounds of decoded messages: longer texts, more error kinds or a larger
// latency histogram are refused (ErrMessage), never truncated.
const (
	MaxText       = 4096
	MaxErrorKinds = 256
	MaxLatency    = 256 << 10
	// MaxMessage is the largest frame the controller accepts.
	MaxMessage = 1 << 20
)

// ErrMessage is wrapped by the decoders for a message they refuse; the
// error names the field.
var ErrMessage = errors.New("cluster: malformed message")

// Runtimes a worker's ready answer names.
const (
	RuntimeKernel    = "kernel sockets"
	RuntimeDataplane = "data plane"
)

// Ready is a worker's answer to hello. Refuse, when set, says why the
// worker cannot run bench trials.
type Ready struct {
	Version int64
	Runtime string
	Refuse  string
}

// ProbeOptions are the probe.Options a worker builds its prober from
// (Limits and the hooks are the worker's own).
type ProbeOptions struct {
	Addr, Host, Path                                      string
	HTTP                                                  bool
	Duration, ConnectTimeout, Timeout, Hold, LagTolerance time.Duration
	Conns, Window, ObjectSize                             int
	CPUBusy                                               float64
	// TLS, if set, makes the trial HTTPS (variants.go); Mix, if set, is
	// the traffic mix of tps and throughput.
	TLS *TLSOptions
	Mix probe.Mix
}

// TrialSpec is one worker's share of a trial.
type TrialSpec struct {
	ID    int64
	Test  string
	Load  float64
	Probe ProbeOptions
}

// Result is one worker's trial: Trial's counts (Verdict, Reason and the
// percentiles unset; Max set) and Latency, the exact histogram of its
// samples in package stats' encoding; Error when the trial could not run,
// Options when that is because the worker cannot honour the trial's
// options (its TLS files, a runtime without HTTPS or mixes).
type Result struct {
	ID      int64
	Error   string
	Options bool
	Trial   capacity.Trial
	Latency []byte
}

// EncodeReady, EncodeTrial, EncodeResult and the ID messages turn values
// into the plain data of a protocol.Custom.
func EncodeReady(r Ready) map[string]any {
	return map[string]any{"v": r.Version, "runtime": r.Runtime, "refuse": r.Refuse}
}

// EncodeTrial is a trial message's data.
func EncodeTrial(s TrialSpec) map[string]any {
	p := s.Probe
	pm := map[string]any{
		"addr": p.Addr, "host": p.Host, "path": p.Path, "http": p.HTTP,
		"duration_ns": int64(p.Duration), "connect_timeout_ns": int64(p.ConnectTimeout), "timeout_ns": int64(p.Timeout),
		"hold_ns": int64(p.Hold), "lag_tolerance_ns": int64(p.LagTolerance),
		"conns": int64(p.Conns), "window": int64(p.Window), "object_size": int64(p.ObjectSize), "cpu_busy": p.CPUBusy,
	}
	encodeProbeVariants(pm, p)
	return map[string]any{"id": s.ID, "test": s.Test, "load": s.Load, "probe": pm}
}

// EncodeResult is a result message's data.
func EncodeResult(r Result) map[string]any {
	t := r.Trial
	errs := make(map[string]any, len(t.Errors))
	for k, v := range t.Errors {
		errs[k] = v
	}
	m := map[string]any{"id": r.ID, "error": r.Error, "options": r.Options, "duration_ns": int64(t.Duration), "attempted": t.Attempted, "failed": t.Failed,
		"achieved": t.Achieved, "bytes": t.Bytes, "second_round": t.SecondRound, "second_round_failed": t.SecondRoundFailed,
		"errors": errs, "generator_limit": t.GeneratorLimit, "max_ns": int64(t.Max)}
	if r.Latency != nil {
		m["latency"] = r.Latency
	}
	encodeTrialVariants(m, t)
	return m
}

// EncodeID is the data of held, abort and go (abort false).
func EncodeID(id int64, abort bool) map[string]any {
	return map[string]any{"id": id, "abort": abort}
}

// fields reads one message's map.
type fields struct {
	typ string
	m   map[string]any
	err error
}

func newFields(typ string, data any) *fields {
	m, ok := data.(map[string]any)
	f := &fields{typ: typ, m: m}
	if !ok {
		f.err = fmt.Errorf("%w: %s: data is %T, not a map", ErrMessage, typ, data)
	}
	return f
}

func (f *fields) fail(key, format string, a ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%w: %s: %s: %s", ErrMessage, f.typ, key, fmt.Sprintf(format, a...))
	}
}

func (f *fields) int(key string, optional bool) int64 {
	if f.err != nil {
		return 0
	}
	v, ok := f.m[key]
	if !ok {
		if !optional {
			f.fail(key, "missing")
		}
		return 0
	}
	n, ok := v.(int64)
	if !ok || n < 0 {
		f.fail(key, "%v is not a non-negative integer", v)
		return 0
	}
	return n
}

func (f *fields) dur(key string) time.Duration { return time.Duration(f.int(key, false)) }

func (f *fields) float(key string) float64 {
	if f.err != nil {
		return 0
	}
	var x float64
	switch v := f.m[key].(type) {
	case float64:
		x = v
	case int64:
		x = float64(v)
	default:
		f.fail(key, "%v is not a number", f.m[key])
		return 0
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		f.fail(key, "%v is not a finite non-negative number", x)
		return 0
	}
	return x
}

func (f *fields) str(key string) string {
	if f.err != nil {
		return ""
	}
	s, ok := f.m[key].(string)
	switch {
	case !ok:
		f.fail(key, "%v is not a string", f.m[key])
	case len(s) > MaxText:
		f.fail(key, "%d bytes, more than %d", len(s), MaxText)
	case !utf8.ValidString(s):
		f.fail(key, "not UTF-8")
	default:
		return s
	}
	return ""
}

func (f *fields) bool(key string) bool {
	if f.err != nil {
		return false
	}
	b, ok := f.m[key].(bool)
	if !ok {
		f.fail(key, "%v is not a bool", f.m[key])
	}
	return b
}

// DecodeReady reads a ready message's data.
func DecodeReady(data any) (Ready, error) {
	f := newFields(TypeReady, data)
	r := Ready{Version: f.int("v", false), Runtime: printable(f.str("runtime")), Refuse: printable(f.str("refuse"))}
	return r, f.err
}

// DecodeTrial reads a trial message's data.
func DecodeTrial(data any) (TrialSpec, error) {
	f := newFields(TypeTrial, data)
	s := TrialSpec{ID: f.int("id", false), Test: f.str("test"), Load: f.float("load")}
	if f.err != nil {
		return s, f.err
	}
	g := newFields(TypeTrial+".probe", f.m["probe"])
	s.Probe = ProbeOptions{Addr: g.str("addr"), Host: g.str("host"), Path: g.str("path"), HTTP: g.bool("http"),
		Duration: g.dur("duration_ns"), ConnectTimeout: g.dur("connect_timeout_ns"), Timeout: g.dur("timeout_ns"),
		Hold: g.dur("hold_ns"), LagTolerance: g.dur("lag_tolerance_ns"), Conns: g.count("conns"), Window: g.count("window"),
		ObjectSize: g.count("object_size"), CPUBusy: g.float("cpu_busy")}
	decodeProbeVariants(g, &s.Probe)
	return s, g.err
}

// count is a non-negative integer that fits an int on every platform.
func (f *fields) count(key string) int {
	n := f.int(key, false)
	if n > math.MaxInt32 {
		f.fail(key, "%d is too large", n)
		return 0
	}
	return int(n)
}

// DecodeResult reads a result message's data.
func DecodeResult(data any) (Result, error) {
	f := newFields(TypeResult, data)
	r := Result{ID: f.int("id", false), Error: f.str("error")}
	t := &r.Trial
	t.Duration = f.dur("duration_ns")
	t.Attempted, t.Failed = f.int("attempted", false), f.int("failed", false)
	t.Achieved, t.Bytes = f.float("achieved"), f.int("bytes", false)
	t.SecondRound, t.SecondRoundFailed = f.int("second_round", false), f.int("second_round_failed", false)
	t.GeneratorLimit, t.Max = f.str("generator_limit"), f.dur("max_ns")
	r.Options = f.bool("options")
	decodeTrialVariants(f, t)
	if f.err != nil {
		return r, f.err
	}
	if t.Failed > t.Attempted || t.SecondRoundFailed > t.SecondRound {
		return r, fmt.Errorf("%w: %s: failed counts above attempted", ErrMessage, TypeResult)
	}
	errs, ok := f.m["errors"].(map[string]any)
	if !ok && f.m["errors"] != nil {
		return r, fmt.Errorf("%w: %s: errors: %T is not a map of strings", ErrMessage, TypeResult, f.m["errors"])
	}
	if len(errs) > MaxErrorKinds {
		return r, fmt.Errorf("%w: %s: errors: %d kinds, more than %d", ErrMessage, TypeResult, len(errs), MaxErrorKinds)
	}
	if len(errs) > 0 {
		e := newFields(TypeResult+".errors", errs)
		t.Errors = make(map[string]int64, len(errs))
		for k := range errs {
			if len(k) > MaxText || !utf8.ValidString(k) {
				return r, fmt.Errorf("%w: %s: errors: a kind of %d bytes or not UTF-8", ErrMessage, TypeResult, len(k))
			}
			t.Errors[k] = e.int(k, false)
		}
		if e.err != nil {
			return r, e.err
		}
	}
	if err := printableResult(&r); err != nil {
		return r, err
	}
	switch l := f.m["latency"].(type) {
	case nil:
	case []byte:
		if len(l) > MaxLatency {
			return r, fmt.Errorf("%w: %s: latency: %d bytes, more than %d", ErrMessage, TypeResult, len(l), MaxLatency)
		}
		r.Latency = l
	default:
		return r, fmt.Errorf("%w: %s: latency: %T is not bytes", ErrMessage, TypeResult, l)
	}
	return r, nil
}

// EncodeHello is a hello message's data: the version and the test the
// search runs.
func EncodeHello(test string) map[string]any {
	return map[string]any{"v": int64(Version), "test": test}
}

// DecodeHello reads a hello message's data: the test ("" from a hello
// without one).
func DecodeHello(data any) (test string, err error) {
	f := newFields(TypeHello, data)
	if f.err == nil {
		if _, ok := f.m["test"]; ok {
			test = f.str("test")
		}
	}
	return test, f.err
}

// DecodeID reads the data of held, go and abort.
func DecodeID(typ string, data any) (id int64, abort bool, err error) {
	f := newFields(typ, data)
	id = f.int("id", false)
	if f.err == nil {
		if _, ok := f.m["abort"]; ok {
			abort = f.bool("abort")
		}
	}
	return id, abort, f.err
}
