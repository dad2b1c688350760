package stack

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/cicada-load/cicada/dataplane/wire"
)

// Program is what a client stack's connections run: Locust users. Set
// Config.Program instead of Request/RequestsPerConn/ThinkTime/Hold (both
// set: refused). Each connection record is one user of one class for its
// life: it connects, sends the class's OnStart requests in order once, then
// loops { pick a task; send its requests in order, each after the previous
// response; wait } until StopClass stops it. New copies what it needs; the
// caller may reuse the Program afterwards.
type Program struct {
	// Requests lists every distinct request, built once.
	Requests []ProgramRequest
	// Classes are the user classes; a connection runs one class for its
	// life. At least one.
	Classes []ProgramClass
}

// ProgramRequest is one request of a Program.
type ProgramRequest struct {
	// Raw is the whole HTTP/1.1 request, one segment (1..MSS bytes), built
	// by the caller (BuildRequest).
	Raw []byte
	// Stat is the index of the stats row this request counts into
	// (0..Program.Stats()-1); rows may be shared.
	Stat int
	// Accept lists the statuses (100..999) that count as success. Nil:
	// Locust's rule, status < 400 succeeds.
	Accept []uint16
}

// ProgramClass is one Locust user class.
type ProgramClass struct {
	// OnStart lists request indices sent in order once after the first
	// connection (Locust's on_start).
	OnStart []int
	// Tasks are the class's tasks; at least one.
	Tasks []ProgramTask
	// Sequential runs the tasks in order, in turn per connection (Locust's
	// SequentialTaskSet), instead of picking them by weight.
	Sequential bool
	// Wait is the wait after each task (and after OnStart).
	Wait Wait
}

// ProgramTask is one task: its requests are sent in order, one task is one
// pick.
type ProgramTask struct {
	// Weight is the task's relative weight (1..1<<20); ignored when the
	// class is Sequential, where it must be 0 or 1.
	Weight int
	// Requests are request indices sent in order; at least one.
	Requests []int
}

// WaitKind selects one of Locust's four wait_time functions.
type WaitKind uint8

// Wait kinds, with Locust's semantics (locust/user/wait_time.py).
const (
	// WaitConstant waits Min (constant(s)).
	WaitConstant WaitKind = iota
	// WaitBetween waits uniformly in [Min, Max) (between(a, b)).
	WaitBetween
	// WaitConstantPacing waits Min minus the time the task took, floored
	// at 0; the first wait is Min (constant_pacing(s)).
	WaitConstantPacing
	// WaitConstantThroughput is pacing at 1/PerSecond seconds
	// (constant_throughput(r)).
	WaitConstantThroughput
)

// Wait is a class's wait time. Fields the kind does not use must be zero.
type Wait struct {
	Kind      WaitKind
	Min, Max  time.Duration
	PerSecond float64
}

// Program limits.
const (
	// MaxProgramRequests bounds Program.Requests.
	MaxProgramRequests = 1 << 16
	// MaxClasses bounds Program.Classes.
	MaxClasses = 1 << 16
	// MaxClassSteps bounds the requests of one class: its OnStart plus
	// every task's Requests.
	MaxClassSteps = 1<<16 - 1
	// MaxStatsRows bounds the stats rows of a Program. A StatsRow holds
	// its histogram in full (about 31 KB), so a stack's rows take up to
	// about 31 MB, and so does each Stats a caller keeps.
	MaxStatsRows = 1024
	// MaxWeight bounds a task's Weight.
	MaxWeight = 1 << 20
)

// Stats returns the number of stats rows of p: the largest
// ProgramRequest.Stat plus one (0 for no requests).
func (p *Program) Stats() int {
	n := 0
	for _, r := range p.Requests {
		n = max(n, r.Stat+1)
	}
	return n
}

// pace returns the pacing period: Min for constant
// pacing, 1/PerSecond for constant throughput, 0 otherwise.
func (w Wait) pace() time.Duration {
	switch w.Kind {
	case WaitConstantPacing:
		return w.Min
	case WaitConstantThroughput:
		return time.Duration(float64(time.Second) / w.PerSecond)
	}
	return 0
}

func (w Wait) validate() error {
	if w.Min > MaxTimeout || w.Max > MaxTimeout {
		return fmt.Errorf("wait above MaxTimeout (%v)", MaxTimeout)
	}
	switch w.Kind {
	case WaitConstant, WaitConstantPacing:
		if w.Min < 0 || w.Max != 0 || w.PerSecond != 0 {
			return fmt.Errorf("wait kind %d takes Min >= 0 only (Min %v, Max %v, PerSecond %v)", w.Kind, w.Min, w.Max, w.PerSecond)
		}
	case WaitBetween:
		if w.Min < 0 || w.Max < w.Min || w.PerSecond != 0 {
			return fmt.Errorf("between takes 0 <= Min <= Max (Min %v, Max %v, PerSecond %v)", w.Min, w.Max, w.PerSecond)
		}
	case WaitConstantThroughput:
		// 1e-6 tasks/s: one task in 11.6 days, far inside int64 ns.
		if w.Min != 0 || w.Max != 0 || !(w.PerSecond >= 1e-6) || math.IsInf(w.PerSecond, 1) {
			return fmt.Errorf("constant throughput takes PerSecond >= 1e-6 only (Min %v, Max %v, PerSecond %v)", w.Min, w.Max, w.PerSecond)
		}
	default:
		return fmt.Errorf("unknown wait kind %d", w.Kind)
	}
	return nil
}

// progRequest is a compiled ProgramRequest.
type progRequest struct {
	raw    []byte
	sum    uint64 // wire.Sum of raw
	stat   uint16
	accept *[16]uint64 // status bit set; nil: status < 400
	head   bool        // a HEAD request: its response has no body
}

// progClass is a compiled ProgramClass: its requests flattened into steps
// (OnStart first, then each task's), the cumulative weight table, and the
// list of its live users (linked through the records).
type progClass struct {
	steps     []uint16 // request index of each step
	nOnStart  uint16
	taskStart []uint16 // first step of task t; taskStart[len(tasks)] = len(steps)
	cum       []uint32 // cumulative weights
	seq       bool
	wait      Wait
	pace      int64 // pacing period (ns) for the pacing kinds

	head  uint32 // first live user (none when empty)
	users int    // live users not stopping
}

// compile validates p against mss and returns its compiled form.
func compileProgram(p *Program, mss uint16) ([]progRequest, []progClass, error) {
	if len(p.Requests) == 0 || len(p.Requests) > MaxProgramRequests {
		return nil, nil, fmt.Errorf("program has %d requests; want 1..%d", len(p.Requests), MaxProgramRequests)
	}
	if len(p.Classes) == 0 || len(p.Classes) > MaxClasses {
		return nil, nil, fmt.Errorf("program has %d classes; want 1..%d", len(p.Classes), MaxClasses)
	}
	reqs := make([]progRequest, len(p.Requests))
	for i, r := range p.Requests {
		if len(r.Raw) == 0 || len(r.Raw) > int(mss) {
			return nil, nil, fmt.Errorf("request %d of %d bytes outside 1..MSS (%d)", i, len(r.Raw), mss)
		}
		if r.Stat < 0 || r.Stat >= MaxStatsRows {
			return nil, nil, fmt.Errorf("request %d: Stat %d outside 0..%d", i, r.Stat, MaxStatsRows-1)
		}
		raw := append([]byte(nil), r.Raw...)
		reqs[i] = progRequest{raw: raw, sum: wire.Sum(raw, 0), stat: uint16(r.Stat), head: isHead(raw)}
		if r.Accept != nil {
			reqs[i].accept = new([16]uint64)
			for _, st := range r.Accept {
				if st < 100 || st > 999 {
					return nil, nil, fmt.Errorf("request %d: accepted status %d outside 100..999", i, st)
				}
				reqs[i].accept[st>>6] |= 1 << (st & 63)
			}
		}
	}
	classes := make([]progClass, len(p.Classes))
	for ci, c := range p.Classes {
		if err := c.Wait.validate(); err != nil {
			return nil, nil, fmt.Errorf("class %d: %w", ci, err)
		}
		if len(c.Tasks) == 0 {
			return nil, nil, fmt.Errorf("class %d has no task", ci)
		}
		pc := progClass{seq: c.Sequential, wait: c.Wait, pace: int64(c.Wait.pace()), head: none}
		n := len(c.OnStart)
		for _, t := range c.Tasks {
			n += len(t.Requests)
		}
		if n > MaxClassSteps {
			return nil, nil, fmt.Errorf("class %d has %d requests; want at most %d", ci, n, MaxClassSteps)
		}
		pc.steps = make([]uint16, 0, n)
		add := func(idx []int, what string) error {
			for _, r := range idx {
				if r < 0 || r >= len(reqs) {
					return fmt.Errorf("class %d %s: request index %d outside 0..%d", ci, what, r, len(reqs)-1)
				}
				pc.steps = append(pc.steps, uint16(r))
			}
			return nil
		}
		if err := add(c.OnStart, "on_start"); err != nil {
			return nil, nil, err
		}
		pc.nOnStart = uint16(len(c.OnStart))
		pc.taskStart = make([]uint16, 0, len(c.Tasks)+1)
		pc.cum = make([]uint32, 0, len(c.Tasks))
		var total uint64
		for ti, t := range c.Tasks {
			if len(t.Requests) == 0 {
				return nil, nil, fmt.Errorf("class %d task %d has no request", ci, ti)
			}
			switch {
			case c.Sequential && (t.Weight < 0 || t.Weight > 1):
				return nil, nil, fmt.Errorf("class %d task %d: Weight %d in a sequential class (want 0 or 1)", ci, ti, t.Weight)
			case !c.Sequential && (t.Weight < 1 || t.Weight > MaxWeight):
				return nil, nil, fmt.Errorf("class %d task %d: Weight %d outside 1..%d", ci, ti, t.Weight, MaxWeight)
			}
			pc.taskStart = append(pc.taskStart, uint16(len(pc.steps)))
			if err := add(t.Requests, fmt.Sprintf("task %d", ti)); err != nil {
				return nil, nil, err
			}
			total += uint64(max(t.Weight, 0))
			pc.cum = append(pc.cum, uint32(total))
		}
		if total > math.MaxUint32 {
			return nil, nil, fmt.Errorf("class %d: total weight %d too large", ci, total)
		}
		pc.taskStart = append(pc.taskStart, uint16(len(pc.steps)))
		classes[ci] = pc
	}
	return reqs, classes, nil
}

// accepts reports whether status counts as a success for r.
func (r *progRequest) accepts(status uint16) bool {
	if r.accept == nil {
		return status < 400
	}
	return status <= 999 && r.accept[status>>6]&(1<<(status&63)) != 0
}

// isHead reports whether raw is a HEAD request, whose response carries no
// body whatever its Content-Length says.
func isHead(raw []byte) bool { return bytes.HasPrefix(raw, []byte("HEAD ")) }
