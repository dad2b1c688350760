package users

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// core is one engine core's share: its targets and pace (written and read
// on the core's goroutine: targets through engine.Do), its published user
// counts (atomics, read by Spawn and Users) and its stats scratch.
type core struct {
	r       *Runtime
	idx     int
	target  []int          // users wanted per class
	users   []atomic.Int64 // users per class, published every turn
	started bool
	last    int64
	tokens  float64
	burst   float64

	st         stack.Stats
	bulk       stats.Bulk
	texts      map[uint32]string // failure text by row<<16 | status
	nextDetail int64
}

func newCore(r *Runtime, idx, classes, rows int) *core {
	c := &core{r: r, idx: idx, target: make([]int, classes), users: make([]atomic.Int64, classes),
		burst: max(r.opts.ConnectRate/100, 1), texts: map[uint32]string{}}
	c.st.Rows = make([]stack.StatsRow, rows)
	return c
}

// tick runs on core k every turn: launch toward the targets at the
// configured pace (a token bucket of ConnectRate per second holding at
// most a hundredth of a second's worth), stop the surplus, publish the
// counts.
func (r *Runtime) tick(k int, s *stack.Stack, now int64) {
	c := r.cores[k]
	if !c.started {
		c.started, c.last = true, now
	}
	c.tokens = min(c.tokens+r.opts.ConnectRate*float64(now-c.last)/1e9, c.burst)
	c.last = now
	for cl, want := range c.target {
		have := s.Users(cl)
		switch {
		case have < want && c.tokens >= 1:
			n := min(want-have, int(c.tokens))
			c.tokens -= float64(s.LaunchClass(now, cl, n))
			have = s.Users(cl)
		case have > want:
			s.StopClass(now, cl, have-want)
			have = s.Users(cl)
		}
		c.users[cl].Store(int64(have))
	}
}

// every runs on core k once a second and when the engine ends: the
// core's stats rows go to the recorder; core 0 logs the detail counters.
func (r *Runtime) every(k int, s *stack.Stack, now int64) {
	c := r.cores[k]
	c.record(s)
	if k == 0 && r.opts.DetailInterval > 0 && now >= c.nextDetail {
		c.nextDetail = now + int64(r.opts.DetailInterval)
		r.logDetail()
	}
}

// record takes the stack's stats rows and records each into the worker's
// recorder in bulk.
func (c *core) record(s *stack.Stack) {
	c.st.Reset()
	s.TakeStats(&c.st)
	rec := c.r.env.Recorder
	if rec == nil {
		return
	}
	for i := range c.st.Rows {
		sr := &c.st.Rows[i]
		if sr.Requests == 0 || i >= len(c.r.rows) {
			continue
		}
		c.fill(i, sr)
		rw := &c.r.rows[i]
		if err := rec.RecordBulk(rw.method, rw.name, &c.bulk); err != nil {
			c.r.log.Load().Error("data plane stats row not recorded", "method", rw.method, "name", rw.name, "err", err)
		}
	}
}

// fill makes c.bulk the Bulk of stats row i.
func (c *core) fill(i int, sr *stack.StatsRow) {
	b := &c.bulk
	b.Requests = int64(sr.Requests)
	b.ContentLength = int64(sr.ContentBytes)
	b.Total = time.Duration(sr.RespTimeSumUs) * time.Microsecond
	b.Min = time.Duration(sr.RespTimeMinUs) * time.Microsecond
	b.Max = time.Duration(sr.RespTimeMaxUs) * time.Microsecond
	b.Exact = nil // the stack keeps Locust's buckets only
	b.Buckets = b.Buckets[:0]
	for j, n := range sr.Hist {
		if n != 0 {
			b.Buckets = append(b.Buckets, protocol.Count{Key: int64(stack.HistKey(j)), N: int64(n)})
		}
	}
	b.Failures = b.Failures[:0]
	add := func(text string, n uint64) {
		if n > 0 {
			b.Failures = append(b.Failures, stats.BulkFailure{Text: text, Count: int64(n)})
		}
	}
	for _, sc := range sr.FailStatus[:sr.FailStatusN] {
		add(c.statusText(i, sc.Status), sc.Count)
	}
	add(textStatusOther, sr.FailStatusOther)
	add(textTimeout, sr.FailTimeout)
	add(textReset, sr.FailReset)
	add(textConnect, sr.FailConnect)
	add(textMalformed, sr.FailMalformed)
	f := &c.r.fail
	f.connect.Add(int64(sr.FailConnect))
	f.timeout.Add(int64(sr.FailTimeout))
	f.reset.Add(int64(sr.FailReset))
	f.malformed.Add(int64(sr.FailMalformed))
}

// statusText is the failure text of a status not accepted by row i, as
// the kernel worker records it: requests' HTTPError with the URL for the
// default rule (status < 400 succeeds), the check's CatchResponseError for
// a status list. The reason phrase is the standard one (the stack keeps
// none), which is what nginx and most servers send.
func (c *core) statusText(i int, status uint16) string {
	key := uint32(i)<<16 | uint32(status)
	if t, ok := c.texts[key]; ok {
		return t
	}
	rw := &c.r.rows[i]
	var t string
	if rw.accept == nil {
		t = (&httpc.Error{Kind: httpc.HTTPStatus, Op: "status", URL: rw.url, Status: int(status)}).Error()
	} else {
		want := make([]string, len(rw.accept))
		for j, a := range rw.accept {
			want[j] = strconv.Itoa(int(a))
		}
		t = (&worker.CheckError{Msg: fmt.Sprintf("status %d, expected %s", status, strings.Join(want, " or "))}).Error()
	}
	c.texts[key] = t
	return t
}

// Failure texts of the stack's failure kinds, the kernel worker's for the
// same outcome where the stack tells it apart.
var (
	textTimeout   = (&httpc.Error{Kind: httpc.ReadTimeout}).Error()
	textReset     = (&httpc.Error{Kind: httpc.Reset, Err: syscall.ECONNRESET}).Error()
	textMalformed = (&httpc.Error{Kind: httpc.Protocol, Err: errors.New("malformed response")}).Error()
	// textConnect: the stack counts a SYN answered by a reset (the kernel
	// worker's ConnectionRefusedError) and a SYN unanswered after its
	// retransmissions (its connect timeout) alike.
	textConnect = "cicada: data plane: connect failed (SYN reset or unanswered after its retransmissions)"
	// textStatusOther: a row tells 16 failing statuses apart per interval.
	textStatusOther = "cicada: data plane: status not accepted (beyond the 16 distinct failing statuses a stats row keeps)"
)

// Connection counter labels for the heartbeat.
const labelConnectFailed = "connect failed"

// failCounters are the request failures by kind since the start.
type failCounters struct {
	connect, timeout, reset, malformed atomic.Int64
}

func (f *failCounters) into(cc *protocol.ConnCounters) {
	if n := f.connect.Load(); n > 0 {
		cc.ConnectErrors = map[string]int64{labelConnectFailed: n}
	}
	for _, e := range []struct {
		label string
		n     int64
	}{{protocol.FailureReadTimeout, f.timeout.Load()}, {protocol.FailureReset, f.reset.Load()}, {protocol.FailureProtocol, f.malformed.Load()}} {
		if e.n > 0 {
			if cc.Errors == nil {
				cc.Errors = map[string]int64{}
			}
			cc.Errors[e.label] = e.n
		}
	}
}

// logDetail logs the dperf-style counters: packets, retransmissions,
// drops by reason, the busy share per core.
func (r *Runtime) logDetail() {
	eng := r.engPtr.Load() // no lock: this runs on a core, which Do may be waiting for
	if eng == nil {
		return
	}
	sum, cores := eng.Counters()
	busy := make([]string, len(cores))
	for i, c := range cores {
		busy[i] = strconv.FormatFloat(c.Busy, 'f', 2, 64)
	}
	r.log.Load().Info("data plane",
		"pkts_in", sum.PktsIn, "pkts_out", sum.PktsOut,
		"syn_out", sum.SynOut, "rst_in", sum.RstIn, "rst_out", sum.RstOut,
		"retrans", sum.RetransSyn+sum.RetransData+sum.RetransFin+sum.FastRetransmit,
		"drop_no_socket", sum.DropNoSocket, "drop_bad_state", sum.DropBadState,
		"drop_out_of_order", sum.DropOutOfOrder, "drop_no_tx_buffer", sum.DropNoTxBuffer,
		"drop_other", sum.DropMalformed+sum.DropNotForUs+sum.DropEtherType+sum.DropProtocol+sum.DropChecksum+sum.DropFragment+sum.DropTxRefused+sum.DropICMPType,
		"open", sum.SocketsCurrent, "busy", strings.Join(busy, " "))
}
