package master

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// DefaultSecondRoundTimeout is the default of Options.SecondRoundTimeout.
const DefaultSecondRoundTimeout = 3 * time.Minute

// connState is one worker's latest connection counters (cicada workers
// send them in heartbeats) and its connect rate.
type connState struct {
	c       *protocol.ConnCounters // nil until a heartbeat carried them
	rate    float64                // connects per second between the last two heartbeats
	prevAt  time.Time
	prevCon int64
	peak    int64  // the most established connections seen
	name    string // its row name in the connections table
	tls     tlsRate
}

// noteConns records the counters of a heartbeat. Precondition: loop.
func (m *Master) noteConns(nd *node, c *protocol.ConnCounters) {
	if c == nil {
		return
	}
	now := timeNow()
	cs := &nd.conn
	if cs.c != nil {
		if dt := now.Sub(cs.prevAt).Seconds(); dt > 0 {
			cs.rate = max(float64(c.Connects-cs.prevCon)/dt, 0)
		}
	}
	cs.tls.note(cs.c != nil, now.Sub(cs.prevAt).Seconds(), c)
	cs.c, cs.prevAt, cs.prevCon = c, now, c.Connects
	cs.peak = max(cs.peak, c.Established)
	st := &m.st
	if st.conn.rows == nil {
		st.conn.rows = make(map[string]connRow)
	}
	if cs.name == "" {
		cs.name = strconv.Itoa(m.index(nd.id)) + " " + shortID(nd.id)
	}
	if _, ok := st.conn.rows[nd.id]; !ok {
		st.conn.order = append(st.conn.order, nd.id)
		st.conn.unsorted = true
	}
	st.conn.rows[nd.id] = connRow{name: cs.name, c: *c, rate: cs.rate, peak: cs.peak, tlsRate: cs.tls.rate}
}

// WorkerWarning is a self-diagnosis warning a cicada worker sent
// (cicada_warning): a limit of the load generator's host.
type WorkerWarning struct {
	Worker  string
	Index   int
	Kind    string
	Message string
}

// SecondRound is the outcome of the second round (Options.SecondRound):
// of Users users, Reused sent their extra request on the connection they
// already had, Reconnected needed a new one, Failed got an error (by kind
// in Errors). Workers lists the workers that answered, Pending those
// asked that did not (yet).
type SecondRound struct {
	Started, Done                      bool
	Users, Reused, Reconnected, Failed int64
	Errors                             map[string]int64
	Workers, Pending                   int
	// Unchecked counts users on workers that cannot run a second round
	// (Python workers).
	Unchecked int64
}

// Passed reports whether every user reused its connection.
func (r SecondRound) Passed() bool {
	return r.Done && r.Users > 0 && r.Reused == r.Users && r.Unchecked == 0 && r.Pending == 0
}

// String is the summary line: "Second round: N users, N reused their
// connection, N reconnected, N failed".
func (r SecondRound) String() string {
	s := fmt.Sprintf("Second round: %d users, %d reused their connection, %d reconnected, %d failed", r.Users, r.Reused, r.Reconnected, r.Failed)
	if len(r.Errors) > 0 {
		s += " (" + formatKinds(r.Errors) + ")"
	}
	if r.Pending > 0 {
		s += fmt.Sprintf("; %d worker(s) did not answer", r.Pending)
	}
	if r.Unchecked > 0 {
		s += fmt.Sprintf("; %d users on workers without second-round support not checked", r.Unchecked)
	}
	if !r.Done {
		s += "; not completed"
	}
	return s
}

// connLoopState is the loop's part of this file.
type connLoopState struct {
	warnings []WorkerWarning
	warned   map[string]map[string]bool // worker id → kinds it warned of
	dropped  int                        // warnings beyond maxWarnings or maxWarnKinds, not kept
	round    SecondRound
	asked    map[string]bool // workers asked, not answered
	roundDue time.Time
	rows     map[string]connRow // the last counters of every worker that sent them, gone ones until forgotten
	// forgotten sums the rows of the gone workers forgotten since (see
	// forgetIdentity); shown as one row.
	forgotten forgottenRows
	order     []string // the keys of rows by worker index…
	unsorted  bool     // … once sorted
}

// cicadaMessage handles cicada's own worker messages. Precondition: loop.
func (m *Master) cicadaMessage(id string, msg protocol.Message) {
	st := &m.st
	data, _ := msg.Data.(*protocol.Custom)
	var fields map[string]any
	if data != nil {
		fields, _ = data.Data.(map[string]any)
	}
	switch msg.Type {
	case protocol.TypeCicadaWarning:
		kind, _ := fields["kind"].(string)
		text, _ := fields["message"].(string)
		if st.conn.warned == nil {
			st.conn.warned = make(map[string]map[string]bool)
		}
		kinds := st.conn.warned[id]
		if kinds[kind] {
			return
		}
		if len(kinds) >= maxWarnKinds || len(st.conn.warnings) >= maxWarnings {
			st.conn.dropped++
			m.logf(slog.LevelDebug, "warning dropped", "Load generator warning from worker %s not kept (%d dropped)", id, st.conn.dropped)
			return
		}
		if kinds == nil {
			kinds = make(map[string]bool)
			st.conn.warned[id] = kinds
			st.noteGone(id) // forgotten with the worker
		}
		kinds[kind] = true
		w := WorkerWarning{Worker: id, Index: m.index(id), Kind: kind, Message: text}
		st.conn.warnings = append(st.conn.warnings, w)
		m.logf(slog.LevelWarn, "load generator warning", "Worker %s (index %d) load generator warning [%s]: %s", id, w.Index, kind, text)
	case protocol.TypeCicadaSecondRoundResult:
		r := &st.conn.round
		if !st.conn.asked[id] {
			m.logf(slog.LevelDebug, "unexpected second-round result", "Unexpected second-round result from worker %s", id)
			return
		}
		delete(st.conn.asked, id)
		r.Workers++
		r.Pending = len(st.conn.asked)
		r.Users += asInt64(fields["users"])
		r.Reused += asInt64(fields["reused"])
		r.Reconnected += asInt64(fields["reconnected"])
		r.Failed += asInt64(fields["failed"])
		if errs, ok := fields["errors"].(map[string]any); ok {
			for k, v := range errs {
				if r.Errors == nil {
					r.Errors = make(map[string]int64)
				}
				r.Errors[k] += asInt64(v)
			}
		}
		m.checkSecondRound()
	}
}

func asInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case uint64:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

// startSecondRound asks every cicada worker, once all users are spawned,
// to make each user send one more request on its connection. Python
// workers cannot; their users are counted as unchecked. Precondition: loop.
func (m *Master) startSecondRound() {
	st := &m.st
	if !m.opts.SecondRound || st.conn.round.Started {
		return
	}
	r := &st.conn.round
	r.Started = true
	st.conn.asked = make(map[string]bool)
	for _, id := range sortedIDs(st.reg.nodes) {
		nd := st.reg.nodes[id]
		if !active(nd.state) {
			continue
		}
		if nd.version != "-1" && nd.version != "?" {
			r.Unchecked += nd.users()
			m.log.Warn(fmt.Sprintf("Worker %s (index %d) is not a cicada worker: its %d users cannot take part in the second round", id, m.index(id), nd.users()))
			continue
		}
		st.conn.asked[id] = true
		m.send(id, protocol.TypeCicadaSecondRound, nil)
	}
	r.Pending = len(st.conn.asked)
	st.conn.roundDue = timeNow().Add(m.opts.SecondRoundTimeout)
	m.log.Info(fmt.Sprintf("Second round: asking %d worker(s) to send one more request per user on its existing connection", len(st.conn.asked)))
	m.checkSecondRound()
}

// checkSecondRound completes the round when every worker answered or the
// timeout passed. Precondition: loop.
func (m *Master) checkSecondRound() {
	st := &m.st
	r := &st.conn.round
	if !r.Started || r.Done {
		return
	}
	if len(st.conn.asked) > 0 && timeNow().Before(st.conn.roundDue) {
		return
	}
	r.Done = true
	r.Pending = len(st.conn.asked)
	if r.Passed() {
		m.log.Info(r.String())
	} else {
		m.log.Warn(r.String())
	}
}

// connView is what the printer and the CSV writer show: one row per worker
// that reports counters, and the warnings and second round so far.
type connView struct {
	standalone bool // Options.Standalone: the total only
	rows       []connRow
	warnings   []WorkerWarning
	round      SecondRound
}

type connRow struct {
	name string
	c    protocol.ConnCounters
	rate float64
	peak int64 // most established connections seen (the total's is the sum of the workers' peaks)
	// tlsRate is the TLS handshakes (full and resumed) per second.
	tlsRate float64
}

// publishConns refreshes the view for the output goroutines.
// Precondition: loop.
func (m *Master) publishConns() {
	st := &m.st
	v := &connView{standalone: m.opts.Standalone, warnings: append([]WorkerWarning(nil), st.conn.warnings...), round: st.conn.round}
	v.round.Errors = copyCounts(st.conn.round.Errors)
	ids := st.conn.order
	if st.conn.unsorted { // only when workers were added or forgotten: not every tick
		ids = slices.DeleteFunc(ids, func(id string) bool { _, ok := st.conn.rows[id]; return !ok })
		sort.Slice(ids, func(i, j int) bool { return m.index(ids[i]) < m.index(ids[j]) })
		st.conn.order = ids
		st.conn.unsorted = false
	}
	v.rows = make([]connRow, 0, len(ids)+1)
	if f := &st.conn.forgotten; f.n > 0 {
		r := f.row
		r.name = fmt.Sprintf("%d gone workers", f.n)
		v.rows = append(v.rows, r)
	}
	for _, id := range ids {
		r := st.conn.rows[id]
		if nd := st.reg.nodes[id]; nd == nil || !active(nd.state) {
			r.rate, r.tlsRate = 0, 0 // gone or missing: no longer connecting
		}
		v.rows = append(v.rows, r)
	}
	m.connView.Store(v)
}

func shortID(id string) string {
	if len(id) > 24 {
		return id[:24]
	}
	return id
}

// total sums the rows.
func (v *connView) total() connRow {
	t := connRow{name: "Total"}
	for _, r := range v.rows {
		t.add(r)
	}
	return t
}

// add adds r's counters to t.
func (t *connRow) add(r connRow) {
	t.c.Open += r.c.Open
	t.c.Established += r.c.Established
	t.c.Connects += r.c.Connects
	t.c.Reconnects += r.c.Reconnects
	t.rate += r.rate
	t.peak += r.peak
	t.c.Closes = addCounts(t.c.Closes, r.c.Closes)
	t.c.ConnectErrors = addCounts(t.c.ConnectErrors, r.c.ConnectErrors)
	t.c.Errors = addCounts(t.c.Errors, r.c.Errors)
	t.addTLS(r)
}

// forgottenRows sums the connection rows of forgotten workers.
type forgottenRows struct {
	n   int
	row connRow
}

// fold adds a forgotten worker's last counters (it is gone: no rate).
func (f *forgottenRows) fold(r connRow) {
	r.rate, r.tlsRate = 0, 0
	f.row.add(r)
	f.n++
}

func addCounts(dst, src map[string]int64) map[string]int64 {
	for k, v := range src {
		if dst == nil {
			dst = make(map[string]int64)
		}
		dst[k] += v
	}
	return dst
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// formatKinds renders counts by kind, largest first, each failure kind
// marked with the side at fault: "3 connection refused (server), 2 local
// ports exhausted (load generator)".
func formatKinds(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

func formatFailures(m map[string]int64) string {
	sided := make(map[string]int64, len(m))
	for k, v := range m {
		side := "server/network"
		if protocol.GeneratorSideKind(k) {
			side = "load generator"
		}
		sided[k+" ("+side+")"] += v
	}
	return formatKinds(sided)
}

// writeConnTable writes the connections table: a row per cicada worker and
// the total, then closes by cause and failures by kind with the side at
// fault. It writes nothing when no worker reports connections.
func writeConnTable(w io.Writer, v *connView) {
	if v == nil || len(v.rows) == 0 {
		return
	}
	var b strings.Builder
	title := "Connections (worker)"
	if v.standalone {
		title = "Connections"
	}
	fmt.Fprintf(&b, "%-30s %9s %12s %9s %11s %10s %11s %9s %15s %9s\n", title, "Open", "Established", "Peak", "Connects/s", "Connects", "Reconnects", "Closes", "Connect errors", "Errors")
	b.WriteString(strings.Repeat("-", 136) + "\n")
	row := func(r connRow) {
		fmt.Fprintf(&b, "%-30s %9d %12d %9d %11.1f %10d %11d %9d %15d %9d\n", r.name, r.c.Open, r.c.Established, r.peak, r.rate, r.c.Connects, r.c.Reconnects,
			sum(r.c.Closes), sum(r.c.ConnectErrors), sum(r.c.Errors))
	}
	if !v.standalone { // the process's own workers are not news
		for _, r := range v.rows {
			row(r)
		}
		b.WriteString(strings.Repeat("-", 136) + "\n")
	}
	t := v.total()
	row(t)
	if len(t.c.Closes) > 0 {
		b.WriteString("Closes by cause: " + formatKinds(t.c.Closes) + "\n")
	}
	if len(t.c.ConnectErrors) > 0 {
		b.WriteString("Connect errors: " + formatFailures(t.c.ConnectErrors) + "\n")
	}
	if len(t.c.Errors) > 0 {
		b.WriteString("Errors on open connections: " + formatFailures(t.c.Errors) + "\n")
	}
	writeTLSLine(&b, t)
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// writeDiagnosis writes the workers' warnings and the second round, for
// the final output.
func writeDiagnosis(w io.Writer, v *connView, secondRound bool) {
	if v == nil {
		return
	}
	var b strings.Builder
	if len(v.warnings) > 0 {
		b.WriteString("Load generator warnings (limits of the workers' hosts, not of the target):\n")
		for _, x := range v.warnings {
			fmt.Fprintf(&b, "  worker %d %s [%s]: %s\n", x.Index, shortID(x.Worker), x.Kind, x.Message)
		}
		b.WriteString("\n")
	}
	if secondRound {
		b.WriteString(v.round.String() + "\n\n")
	}
	io.WriteString(w, b.String())
}

// connCSV is PREFIX_connections.csv: the connections table, rewritten at
// every CSV tick.
type connCSV struct {
	mu     sync.Mutex
	f      *os.File
	closed bool
}

func openConnCSV(prefix string) (*connCSV, error) {
	f, err := os.Create(prefix + "_connections.csv")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCSV, err)
	}
	c := &connCSV{f: f}
	return c, c.write(nil)
}

func (c *connCSV) write(v *connView) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	var b strings.Builder
	b.WriteString("Worker,Open,Established,Peak established,Connects/s,Connects,Reconnects,Closes,Connect errors,Errors,Closes by cause,Connect errors by kind,Errors by kind" + connCSVTLSHeader + "\n")
	if v != nil && len(v.rows) > 0 {
		row := func(r connRow) {
			fmt.Fprintf(&b, "%s,%d,%d,%d,%s,%d,%d,%d,%d,%d,%s,%s,%s", csvQuote(r.name), r.c.Open, r.c.Established, r.peak, strconv.FormatFloat(r.rate, 'f', 1, 64),
				r.c.Connects, r.c.Reconnects, sum(r.c.Closes), sum(r.c.ConnectErrors), sum(r.c.Errors),
				csvQuote(formatKinds(r.c.Closes)), csvQuote(formatFailures(r.c.ConnectErrors)), csvQuote(formatFailures(r.c.Errors)))
			appendTLSCSV(&b, r) // conncsvtls.go
			b.WriteByte('\n')
		}
		for _, r := range v.rows {
			row(r)
		}
		row(v.total())
	}
	if _, err := c.f.WriteAt([]byte(b.String()), 0); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	if err := c.f.Truncate(int64(b.Len())); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	return nil
}

func (c *connCSV) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.f.Close()
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func copyConns(c *protocol.ConnCounters) *protocol.ConnCounters {
	if c == nil {
		return nil
	}
	out := *c
	out.Closes = copyCounts(c.Closes)
	out.ConnectErrors = copyCounts(c.ConnectErrors)
	out.Errors = copyCounts(c.Errors)
	return &out
}
