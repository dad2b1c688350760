package master

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// node is one registered worker (Locust's WorkerNode).
type node struct {
	id        string
	state     string
	liveness  int
	cpu       float64
	cpuWarned bool
	memory    int64
	classes   map[string]int64 // users per class, as last reported; set through setClasses
	total     int64            // sum of classes
	version   string           // client_ready data; "-1" for the skip value; "?" when adopted
	echo      bool             // echo heartbeats to this worker
	echoMsg   []byte           // the encoded echo
	headMsgs  bool             // understands the master's spawning_complete (Locust ≥ 2.29, cicada)
	adopted   bool
	stopSent  bool      // stop sent because it ran users while no test ran (see stopOrphan); reset by a spawn
	lastEcho  time.Time // when the last heartbeat echo was sent
	conn      connState // connection counters (cicada workers)
	// classesChecked: its class list was compared with the master's once
	// (checkClasses).
	classesChecked bool
}

func (n *node) users() int64 { return n.total }

func sumCounts(m map[string]int64) int64 {
	var s int64
	for _, c := range m {
		s += c
	}
	return s
}

// Node states by slot, for the per-state counts of nodeIndex.
const (
	slotReady = iota
	slotSpawning
	slotRunning
	slotMissing
	slotOther // any other state a worker reports (stopped, cleanup…)
	numSlots
)

func stateSlot(state string) int {
	switch state {
	case protocol.StateReady:
		return slotReady
	case protocol.StateSpawning:
		return slotSpawning
	case protocol.StateRunning:
		return slotRunning
	case protocol.StateMissing:
		return slotMissing
	}
	return slotOther
}

// nodeIndex is what the loop keeps incrementally about st.reg.nodes, so that
// no message or tick recounts all workers (the master must handle tens of
// thousands): the nodes per state, and the users per class summed over the
// active (ready, spawning, running) nodes. Its invariants, checked by
// checkIndex in tests, hold because nodes enter and leave st.reg.nodes only
// through addNode and deleteNode, change state only through setNodeState
// and change their users only through setClasses.
type nodeIndex struct {
	states  [numSlots]int
	classes map[string]classSum // over active nodes; a class is present while an active node reports it
}

// classSum is one class of nodeIndex.classes.
type classSum struct {
	users int64
	nodes int // active nodes whose classes carry this class (even with 0 users)
}

// loopIndex is the loop's incremental bookkeeping: the node index, the
// coalesced re-dispatch and the final-report wait (loopState.index).
type loopIndex struct {
	nodes nodeIndex
	redisp
	final finalIndex
}

// ix returns the loop's incremental bookkeeping. Precondition: loop.
func (s *loopState) ix() *loopIndex { return &s.index }

// count adds sign × nd to the index (nd's state, and its classes when
// active).
func (x *nodeIndex) count(nd *node, sign int) {
	x.states[stateSlot(nd.state)] += sign
	if active(nd.state) {
		x.countClasses(nd.classes, sign)
	}
}

func (x *nodeIndex) countClasses(classes map[string]int64, sign int) {
	if len(classes) == 0 {
		return
	}
	if x.classes == nil {
		x.classes = make(map[string]classSum)
	}
	for c, n := range classes {
		cs := x.classes[c]
		cs.users += int64(sign) * n
		cs.nodes += sign
		if cs.nodes == 0 {
			delete(x.classes, c)
		} else {
			x.classes[c] = cs
		}
	}
}

// setNodeState changes a node's state, keeping the index. Every state
// change of a node in st.reg.nodes goes through it. Precondition: loop; nd is
// in st.reg.nodes.
func (s *loopState) setNodeState(nd *node, state string) {
	if nd.state == state {
		return
	}
	x := &s.ix().nodes
	x.count(nd, -1)
	nd.state = state
	x.count(nd, 1)
}

// setClasses replaces a node's reported users, keeping the loop's total and
// the index. Precondition: loop; nd is in st.reg.nodes.
func (s *loopState) setClasses(nd *node, classes map[string]int64) {
	t := sumCounts(classes)
	s.reg.users += t - nd.total
	if active(nd.state) {
		x := &s.ix().nodes
		x.countClasses(nd.classes, -1)
		x.countClasses(classes, 1)
	}
	nd.classes, nd.total = classes, t
}

// addNode and deleteNode keep the user total and the index. Precondition:
// loop.
func (s *loopState) addNode(nd *node) {
	s.deleteNode(nd.id)
	s.reg.nodes[nd.id] = nd
	s.reg.users += nd.total
	s.ix().nodes.count(nd, 1)
}

func (s *loopState) deleteNode(id string) {
	if old := s.reg.nodes[id]; old != nil {
		s.reg.users -= old.total
		s.ix().nodes.count(old, -1)
		delete(s.reg.nodes, id)
		s.noteGone(id)
	}
}

func active(state string) bool {
	return state == protocol.StateReady || state == protocol.StateSpawning || state == protocol.StateRunning
}

// workerCount is Locust's worker_count: ready + spawning + running.
func (s *loopState) workerCount() int {
	x := &s.ix().nodes
	return x.states[slotReady] + x.states[slotSpawning] + x.states[slotRunning]
}

// countState returns the number of nodes in state: O(1) for ready,
// spawning, running and missing, a scan for others (unused by the loop).
func (s *loopState) countState(state string) int {
	if slot := stateSlot(state); slot != slotOther {
		return s.ix().nodes.states[slot]
	}
	n := 0
	for _, nd := range s.reg.nodes {
		if nd.state == state {
			n++
		}
	}
	return n
}

// userCount is Locust's user_count: the users reported by all nodes.
func (s *loopState) userCount() int64 { return s.reg.users }

// reportedClasses is Locust's reported_user_classes_count: the users per
// class of the active nodes. The result is owned by the caller.
func (s *loopState) reportedClasses() map[string]int64 {
	x := &s.ix().nodes
	out := make(map[string]int64, len(x.classes))
	for c, cs := range x.classes {
		out[c] = cs.users
	}
	return out
}

// checkIndex recounts what the index keeps and reports the first
// difference (tests run it after every event). Precondition: loop.
func (s *loopState) checkIndex() error {
	var want nodeIndex
	var users int64
	for id, nd := range s.reg.nodes {
		if nd.id != id {
			return fmt.Errorf("node %q stored under %q", nd.id, id)
		}
		if t := sumCounts(nd.classes); t != nd.total {
			return fmt.Errorf("node %s: total %d, classes sum to %d", id, nd.total, t)
		}
		users += nd.total
		want.count(nd, 1)
	}
	x := &s.ix().nodes
	if users != s.reg.users {
		return fmt.Errorf("users %d, recount %d", s.reg.users, users)
	}
	if want.states != x.states {
		return fmt.Errorf("states (ready, spawning, running, missing, other) %v, recount %v", x.states, want.states)
	}
	if len(want.classes) != len(x.classes) {
		return fmt.Errorf("classes %v, recount %v", x.classes, want.classes)
	}
	for c, cs := range want.classes {
		if x.classes[c] != cs {
			return fmt.Errorf("class %s: %+v, recount %+v", c, x.classes[c], cs)
		}
	}
	return s.checkFinalIndex()
}

// formatClasses is Locust's _format_user_classes_count_for_log:
// {"A": 1, "B": 2} (3 total users), keys sorted, JSON with ", " and ": ".
func formatClasses(m map[string]int64) string {
	names := make([]string, 0, len(m))
	var total int64
	for k, v := range m {
		names = append(names, k)
		total += v
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		q, _ := json.Marshal(k)
		b.Write(q)
		b.WriteString(": ")
		b.WriteString(strconv.FormatInt(m[k], 10))
	}
	fmt.Fprintf(&b, "} (%d total users)", total)
	return b.String()
}

// echoHeartbeats decides whether a worker understands the master's
// heartbeat echo (Locust ≥ 2.19): see the package documentation.
func echoHeartbeats(cr *protocol.ClientReady) bool {
	if cr.VersionSkipCheck {
		return true
	}
	if cr.Version == "" {
		return false // Debian's python3-locust 2.12.1
	}
	major, minor, ok := majorMinor(cr.Version)
	if !ok {
		return true
	}
	return major > 2 || major == 2 && minor >= 19
}

// knowsMasterSpawningComplete: Locust ≥ 2.29 and cicada (-1) handle the
// master's spawning_complete broadcast; older workers log it as unknown.
func knowsMasterSpawningComplete(cr *protocol.ClientReady) bool {
	if cr.VersionSkipCheck {
		return true
	}
	major, minor, ok := majorMinor(cr.Version)
	return ok && (major > 2 || major == 2 && minor >= 29)
}

func majorMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(parts[0])
	minor, err2 = strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}

// ---- message handling (loop goroutine) ----

func (m *Master) handle(in inbound) {
	if r, ok := in.msg.Data.(*protocol.StatsReport); ok {
		// Merged and not retained: its memory serves the next report.
		defer r.Release()
	}
	changed := m.handleMessage(in)
	m.settleRedispatch()
	if changed {
		m.checkStopped()
	}
	m.checkReportWait()
	m.checkStopWaiters()
	m.checkFinal()
	if testHookLoopEvent != nil {
		testHookLoopEvent(m)
	}
}

// testHookLoopEvent, if set (by tests, before any master runs), is called
// on the loop after every message and heartbeat tick.
var testHookLoopEvent func(*Master)

// handleMessage applies one message and reports whether a worker's state
// may have changed (then Locust's check_stopped runs).
func (m *Master) handleMessage(in inbound) (stateChange bool) {
	st := &m.st
	if in.err != nil {
		m.logf(slog.LevelError, "malformed message", "Malformed message from worker %s (ignored): %v", in.id, in.err)
		return false
	}
	msg := in.msg
	id := in.id
	if in.foreignID {
		m.logf(slog.LevelDebug, "foreign node_id", "Message %s from %s carries node_id %q; using the connection's identity", msg.Type, id, msg.NodeID)
	}
	switch msg.Type {
	case protocol.TypeClientReady:
		cr, ok := msg.Data.(*protocol.ClientReady)
		if !ok {
			m.logf(slog.LevelError, "bad client_ready", "Bad client_ready data from worker %s: %T", id, msg.Data)
			return false
		}
		m.clientReady(id, cr)
	case protocol.TypeClientStopped:
		nd := st.reg.nodes[id]
		if nd == nil {
			m.logf(slog.LevelWarn, "unknown worker", "Received %s message from an unknown worker: %s.", msg.Type, id)
			return false
		}
		st.reg.stopped[id] = true
		m.removeNode(nd)
		m.logf(m.workerLogLevel(), "worker stopped", "Worker %s (index %d) reported that it has stopped, removing from running workers", id, m.index(id))
	case protocol.TypeSpawning:
		if nd := st.reg.nodes[id]; nd != nil {
			st.setNodeState(nd, protocol.StateSpawning)
		} else {
			m.logf(slog.LevelDebug, "spawning from unregistered", "Ignoring spawning from unregistered worker %s", id)
		}
	case protocol.TypeSpawningComplete:
		sc, ok := msg.Data.(*protocol.SpawningComplete)
		nd := st.reg.nodes[id]
		switch {
		case !ok:
			m.logf(slog.LevelError, "bad spawning_complete", "Bad spawning_complete data from worker %s: %T", id, msg.Data)
		case nd == nil:
			m.logf(slog.LevelDebug, "spawning_complete from unregistered", "Ignoring spawning_complete from unregistered worker %s", id)
		default:
			st.setNodeState(nd, protocol.StateRunning)
			st.setClasses(nd, copyCounts(sc.UserClassesCount))
		}
	case protocol.TypeQuit:
		m.workerQuit(id)
	case protocol.TypeException:
		ex, ok := msg.Data.(*protocol.Exception)
		if !ok {
			m.logf(slog.LevelError, "bad exception", "Bad exception data from worker %s: %T", id, msg.Data)
			return false
		}
		if !st.spawnedTo(id) {
			// As its requests (see statsReport): not of a test of ours.
			m.logf(slog.LevelDebug, "exception discarded", "Discarded an exception from worker %s, which runs no test of this master", id)
			return false
		}
		if ok, _ := st.warn.excLimit.Allow(exceptionCause(ex.Traceback), timeNow()); ok {
			m.stats.AddException(ex.Msg, ex.Traceback, id)
		}
		return false
	case protocol.TypeStats:
		r, ok := msg.Data.(*protocol.StatsReport)
		if !ok {
			m.logf(slog.LevelError, "bad stats", "Bad stats data from worker %s: %T", id, msg.Data)
			return false
		}
		m.statsReport(id, r)
		return false
	case protocol.TypeHeartbeat:
		hb, ok := msg.Data.(*protocol.Heartbeat)
		if !ok {
			m.logf(slog.LevelWarn, "bad heartbeat", "Unexpected heartbeat data from worker %s: %T", id, msg.Data)
			return false
		}
		return m.heartbeat(id, hb)
	case protocol.TypeLogs:
		m.logf(slog.LevelDebug, "logs received", "Received logs from worker %s", id)
		return false
	case protocol.TypeLocustfile:
		// A worker started with -f - asks for the scenario (from a
		// temporary identity, not registered as a worker).
		m.send(id, protocol.TypeLocustfile, &protocol.Locustfile{Data: m.locustfileReply(id)})
		return false
	case protocol.TypeCicadaWarning, protocol.TypeCicadaSecondRoundResult:
		m.cicadaMessage(id, msg)
		return false
	case protocol.TypeCicadaFeedTake:
		m.feedTake(id, msg)
		return false
	default:
		m.logf(slog.LevelWarn, "unknown message type", "Unknown message type received from worker %s (index %d): %s", id, m.index(id), msg.Type)
		return false
	}
	return true
}

// exceptionCause is the limiter key of an exception: a hash of its
// traceback (the statistics' key), so that the limiter keeps 8 bytes per
// cause however long tracebacks are.
func exceptionCause(traceback string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(traceback)) // never fails
	return string(h.Sum(nil))
}

func copyCounts(in map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func (m *Master) clientReady(id string, cr *protocol.ClientReady) {
	st := &m.st
	version := cr.Version
	switch {
	case cr.VersionSkipCheck:
		version = "-1"
	case cr.Version == "":
		m.logf(slog.LevelWarn, "empty version", "Worker %s sent an empty version (as Debian's python3-locust 2.12.1 does); accepting it", id)
	default:
		if major, _, ok := majorMinor(cr.Version); !ok || major != 2 {
			m.logf(slog.LevelWarn, "different version", "A worker (%s) running a different version (%s) connected; cicada speaks Locust 2.x", id, cr.Version)
		} else {
			m.logf(slog.LevelDebug, "worker version", "Worker %s runs Locust %s", id, cr.Version)
		}
	}
	idx := m.index(id)
	m.send(id, protocol.TypeAck, &protocol.Ack{Index: int64(idx), Cicada: protocol.CicadaVersion})
	delete(st.reg.stopped, id)
	delete(st.reg.quitted, id)
	if old := st.reg.nodes[id]; old != nil {
		m.logf(m.workerLogLevel(), "registered again", "Worker %s (index %d) registered again; replacing it", id, idx)
	}
	nd := &node{id: id, state: protocol.StateReady, liveness: m.opts.HeartbeatLiveness, classes: map[string]int64{},
		version: version, echo: echoHeartbeats(cr), headMsgs: knowsMasterSpawningComplete(cr), memory: -1}
	st.addNode(nd)
	if st.end.quitting {
		// A worker registering while the master quits: it has no users.
		m.send(id, protocol.TypeQuit, nil)
		return
	}
	m.workerJoined(id)
	m.logf(m.workerLogLevel(), "worker ready", "Worker %s (index %d) reported as ready. %d workers connected.", id, idx, st.workerCount())
	if m.opts.EnableRebalancing && st.run.state == protocol.StateRunning && st.ramp.spawnComplete {
		m.requestRedispatch()
	}
}

// workerJoined adds a (re)joining worker to the dispatcher and asks for a
// re-dispatch when the test runs and no dispatch is going on, as Locust
// does (coalesced: see requestRedispatch).
func (m *Master) workerJoined(id string) {
	st := &m.st
	if st.ramp.disp == nil {
		return
	}
	st.ramp.disp.AddWorker(id)
	if !st.ramp.stepping && (st.run.state == protocol.StateRunning || st.run.state == protocol.StateSpawning) {
		m.requestRedispatch()
	}
}

// removeNode deletes a node (client_stopped, quit) and asks for a
// re-dispatch.
func (m *Master) removeNode(nd *node) {
	st := &m.st
	st.deleteNode(nd.id)
	if st.ramp.disp != nil {
		st.ramp.disp.RemoveWorker(nd.id)
		if !st.ramp.stepping && (st.run.state == protocol.StateRunning || st.run.state == protocol.StateSpawning) {
			m.requestRedispatch()
		}
	}
}

func (m *Master) heartbeat(id string, hb *protocol.Heartbeat) (stateChange bool) {
	st := &m.st
	nd := st.reg.nodes[id]
	if nd == nil {
		if st.reg.stopped[id] || st.reg.quitted[id] || st.end.quitting {
			return false // stopping (until its client_ready) or gone: as Locust
		}
		nd = m.adopt(id, hb)
		stateChange = true
	} else {
		nd.liveness = m.opts.HeartbeatLiveness
		if nd.state == protocol.StateMissing {
			m.logf(slog.LevelInfo, "self-healed", "Worker %s self-healed with heartbeat, setting state to %s.", id, hb.State)
			st.setNodeState(nd, hb.State)
			m.workerJoined(id)
		}
	}
	if nd.state != hb.State {
		stateChange = true
		st.setNodeState(nd, hb.State)
	}
	m.stopOrphan(nd)
	nd.cpu = hb.CPUUsage
	if !nd.cpuWarned && nd.cpu > 90 {
		nd.cpuWarned = true
		st.warn.cpuWarned = true
		m.logf(slog.LevelWarn, "cpu threshold", "Worker %s (index %d) exceeded cpu threshold (will only log this once per worker)", id, m.index(id))
	}
	if hb.MemoryUsage >= 0 {
		nd.memory = hb.MemoryUsage
	}
	m.noteConns(nd, hb.Connections)
	if nd.echo {
		if now := timeNow(); now.Sub(nd.lastEcho) >= m.opts.HeartbeatEchoInterval {
			nd.lastEcho = now
			m.sendEcho(nd)
		}
	}
	return stateChange
}

// sendEcho sends the master heartbeat, encoded once per node.
func (m *Master) sendEcho(nd *node) {
	if nd.echoMsg == nil {
		b, err := protocol.Encode(protocol.Message{Type: protocol.TypeHeartbeat, Data: &protocol.MasterHeartbeat{}, NodeID: nd.id})
		if err != nil {
			m.log.Error("Cannot encode a heartbeat: " + err.Error())
			return
		}
		nd.echoMsg = b
	}
	if err := m.router.Send(nd.id, nd.echoMsg); err != nil {
		m.logf(slog.LevelDebug, "send heartbeat", "Sending heartbeat to worker %s: %v", nd.id, err)
	}
}

// adopt registers a worker known only from its heartbeat: the master
// restarted, or deleted it after a partition that has healed.
func (m *Master) adopt(id string, hb *protocol.Heartbeat) *node {
	st := &m.st
	idx := m.index(id)
	nd := &node{id: id, state: hb.State, liveness: m.opts.HeartbeatLiveness, classes: map[string]int64{},
		version: "?", echo: true, adopted: true, memory: -1}
	st.addNode(nd)
	m.logf(slog.LevelInfo, "adopted", "Worker %s (index %d) is not registered (master restarted, or it was deleted while unreachable); adopting it in state %s. %d workers connected.",
		id, idx, hb.State, st.workerCount())
	if m.stopOrphan(nd) {
		return nd
	}
	m.workerJoined(id)
	return nd
}

// spawnedTo reports whether this master ever sent worker id a spawn: only
// then does the worker run users of a test of ours. Precondition: loop.
func (s *loopState) spawnedTo(id string) bool {
	_, ok := s.reg.lastTS[id]
	return ok
}

// stopOrphan sends stop, once (until the next spawn to it), to a worker
// that runs users while the master is ready or stopped: it runs a test of
// a master that is gone (this master restarted, or the worker was deleted
// while unreachable), or one of ours that is over. Its users would load
// the target and stop a headless master from ever seeing it ready; the
// worker re-registers with client_ready after its stop timeout. While a
// test runs, the re-dispatch that its joining asked for gives it our users
// instead; while the master stops, it has been sent stop already. It
// reports whether stop was sent. Precondition: loop.
func (m *Master) stopOrphan(nd *node) bool {
	st := &m.st
	idle := st.run.state == protocol.StateReady || st.run.state == protocol.StateStopped
	busy := nd.state == protocol.StateRunning || nd.state == protocol.StateSpawning
	if !idle || !busy || nd.stopSent || st.end.quitting {
		return false
	}
	nd.stopSent = true
	m.logf(slog.LevelInfo, "orphan stopped", "Sending stop to worker %s, which runs users while no test runs", nd.id)
	m.send(nd.id, protocol.TypeStop, nil)
	return true
}

func (m *Master) statsReport(id string, r *protocol.StatsReport) {
	st := &m.st
	nd := st.reg.nodes[id]
	// Merged whether or not id is still a node: a worker of ours sends
	// client_stopped once its users have stopped, and the requests
	// finished since its last periodic report come in the next one, after
	// the master deleted its node (as for a worker deleted while
	// unreachable). lastTS outlives the node for goneTicks.
	if st.spawnedTo(id) {
		m.noteDropped(id, r.Dropped)
		m.stats.Merge(r)
	} else {
		// Requests of a test this master did not start (an orphan of a
		// master that is gone, or a sender never sent a spawn) stay out
		// of its totals.
		m.logf(slog.LevelDebug, "report discarded", "Discarded the requests of a report from worker %s, which runs no test of this master", id)
	}
	if f := st.end.final[id]; f != nil && !f.stats {
		m.finalStats(f)
	}
	if nd != nil && r.UserClassesCount != nil {
		st.setClasses(nd, copyCounts(r.UserClassesCount))
	}
	if len(st.run.classes) == 0 && len(r.UserClassesCount) > 0 {
		names := make([]string, 0, len(r.UserClassesCount))
		for c := range r.UserClassesCount {
			names = append(names, c)
		}
		sort.Strings(names)
		for _, c := range names {
			st.run.classes = append(st.run.classes, UserClass{Name: c, Weight: 1})
		}
		m.log.Info(fmt.Sprintf("User classes learned from worker %s: %s (weight 1 each)", id, strings.Join(names, ", ")))
	}
	if nd != nil && !nd.classesChecked && len(r.UserClassesCount) > 0 && len(st.run.classes) > 0 {
		nd.classesChecked = true
		m.checkClasses(nd, r.UserClassesCount)
	}
}

// checkClasses logs an ERROR, in the master's own output, when a cicada
// worker lacks classes the master dispatches: its users of them would not
// start (the worker reports that only to its own log and as an
// exception). A cicada worker's stats report lists all its classes, zeros
// included; a Python worker's lists only the classes it runs, so only
// cicada workers (client_ready's -1) are checked, and one with a single
// class serves any class name. Precondition: loop.
func (m *Master) checkClasses(nd *node, have map[string]int64) {
	if nd.version != "-1" || len(have) < 2 {
		return
	}
	var missing []string
	for _, c := range m.st.run.classes {
		if _, ok := have[c.Name]; !ok {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) == 0 {
		return
	}
	names := make([]string, 0, len(have))
	for c := range have {
		names = append(names, c)
	}
	sort.Strings(names)
	master := make([]string, len(m.st.run.classes))
	for i, c := range m.st.run.classes {
		master[i] = c.Name
	}
	m.logf(slog.LevelError, "class mismatch", "User class mismatch: the master dispatches %s; worker %s (index %d) has %s, so its users of %s do not start. "+
		"Give the master -f with the workers' scenario, or no -f to use the classes the workers report",
		strings.Join(master, ", "), nd.id, m.index(nd.id), strings.Join(names, ", "), strings.Join(missing, ", "))
}

func (m *Master) workerQuit(id string) {
	st := &m.st
	st.reg.quitted[id] = true
	defer st.noteGone(id) // once its node, if any, is deleted
	if f := st.end.final[id]; f != nil {
		m.finalQuit(f)
	}
	nd := st.reg.nodes[id]
	if nd == nil {
		if st.end.quitAfterStopped && st.reg.stopped[id] {
			m.logf(m.workerLogLevel(), "worker quit", "Worker '%s' (index %d) quit. %d workers ready.", id, m.index(id), st.countState(protocol.StateReady))
		}
		return
	}
	m.removeNode(nd)
	m.logf(m.workerLogLevel(), "worker quit", "Worker '%s' (index %d) quit. %d workers ready.", id, m.index(id), st.countState(protocol.StateReady))
	if st.end.quitting {
		return
	}
	if st.workerCount() <= 0 && (st.run.state == protocol.StateRunning || st.run.state == protocol.StateSpawning) {
		m.log.Info("The last worker quit, stopping test.")
		m.stopTest(true)
		if m.opts.Headless {
			m.beginQuit()
		}
	}
}

// liveness is Locust's heartbeat_worker tick (Locust 2.12.1
// locust/runners.py, MasterRunner.heartbeat_worker). It
// visits every node once, in no order, and sorts only the nodes that go
// missing or are deleted, whose log lines and effects come in id order as
// Locust's do.
func (m *Master) liveness() {
	m.st.reg.gone.ticks++
	m.forgetGone(m.goneTicks())
	m.publishConns()
	m.flushLimits()
	st := &m.st
	var dead, missing []*node
	for _, nd := range st.reg.nodes {
		if nd.state == protocol.StateMissing && nd.liveness <= -m.opts.DeadTicks {
			dead = append(dead, nd)
		}
		if nd.liveness < 0 && nd.state != protocol.StateMissing {
			missing = append(missing, nd)
		} else {
			nd.liveness--
		}
	}
	sortNodes(missing)
	for _, nd := range missing {
		id := nd.id
		m.logf(slog.LevelInfo, "worker missing", "Worker %s failed to send heartbeat, setting state to missing.", id)
		st.setNodeState(nd, protocol.StateMissing)
		st.setClasses(nd, map[string]int64{})
		if st.ramp.disp != nil {
			st.ramp.disp.RemoveWorker(id)
			if m.opts.EnableRebalancing && st.run.state == protocol.StateRunning && st.ramp.spawnComplete {
				m.requestRedispatch()
			}
		}
		if st.workerCount() <= 0 && !st.end.quitting {
			m.log.Info("The last worker went missing, stopping test.")
			m.stopTest(true)
			m.checkStopped()
		}
	}
	if len(dead) > 0 {
		sortNodes(dead)
		for _, nd := range dead {
			id := nd.id
			m.logf(slog.LevelInfo, "worker removed", "Worker %s (index %d) missing for too long, removing it.", id, m.index(id))
			st.deleteNode(id)
			if f := st.end.final[id]; f != nil {
				m.finalGone(f)
			}
		}
		if (st.run.state == protocol.StateRunning || st.run.state == protocol.StateSpawning) && !st.end.quitting {
			// The dispatcher forgot these workers when they went missing;
			// send the split over the remaining ones now (not coalesced:
			// once per tick at most).
			m.redispatch()
		}
		m.checkFinal()
	}
	m.settleRedispatch()
	if testHookLoopEvent != nil {
		testHookLoopEvent(m)
	}
}

func sortNodes(nds []*node) {
	if len(nds) > 1 {
		sort.Slice(nds, func(i, j int) bool { return nds[i].id < nds[j].id })
	}
}

// checkStopped is Locust's check_stopped, after every message that may
// change a worker's state. O(1): it reads the index.
func (m *Master) checkStopped() {
	st := &m.st
	if st.run.state == protocol.StateReady || st.run.state == protocol.StateStopped {
		return
	}
	allReady := st.ix().nodes.states[slotReady] == len(st.reg.nodes)
	if (st.run.state == protocol.StateStopping && allReady) || st.workerCount() == 0 {
		m.setState(protocol.StateStopped)
	}
}

// workerLogLevel is the level of lines about workers joining: DEBUG when
// they are the process's own (Options.Standalone), as Locust standalone has
// no workers to speak of.
func (m *Master) workerLogLevel() slog.Level {
	if m.opts.Standalone {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// locustfileReply is the answer to a locustfile request (Locust's 2.31+
// format): the scenario file's name and contents, read now, or an error.
func (m *Master) locustfileReply(id string) map[string]any {
	path := m.opts.ScenarioFile
	if path == "" {
		m.logf(slog.LevelWarn, "locustfile request", "Worker %s asked for the scenario file (-f -) but this master has no -f file", id)
		return map[string]any{"error": "this master (cicada) has no scenario file to serve (no -f): start the worker with its own -f"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		m.logf(slog.LevelError, "locustfile request", "Worker %s asked for the scenario file: %v", id, err)
		return map[string]any{"error": fmt.Sprintf("the master cannot read its scenario file: %v", err)}
	}
	m.logf(slog.LevelInfo, "locustfile request", "Sending scenario file %s to worker %s (-f -)", path, id)
	return map[string]any{"locustfiles": []any{map[string]any{"filename": filepath.Base(path), "contents": string(data)}}}
}
