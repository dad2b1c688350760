package worker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker/httpc"
)

// diagState is the self-diagnosis state, owned by the controller goroutine
// (warned is under Worker.mu: the heartbeat checks use it too).
type diagState struct {
	dests    map[string]netip.AddrPort // resolved base URLs; invalid if not resolvable
	checked  bool                      // a full check ran
	users    int64                     // the user count of the last full check
	headroom int64                     // users the limits allowed at the last full check (-1: unknown)
	lastFull time.Time
	env      *diag.Env // the container or pod the worker runs in (read at the first check)
}

// diagRecheck is the shortest interval between two full checks while the
// users grow beyond the last headroom. A full check reads /proc/self/fd
// and may dump the host's sockets, which costs more the more connections
// the host holds.
const diagRecheck = 10 * time.Second

// warnOnce logs a self-diagnosis warning and sends it to the master as
// cicada_warning, once per kind for the worker's lifetime. A Python master
// logs it as an unknown message type; the worker's own log says it in
// full.
func (w *Worker) warnOnce(kind, msg string) {
	w.mu.Lock()
	if w.mu.warned[kind] {
		w.mu.Unlock()
		return
	}
	if w.mu.warned == nil {
		w.mu.warned = make(map[string]bool)
	}
	w.mu.warned[kind] = true
	w.mu.Unlock()
	w.log.Warn("cicada self-diagnosis: "+msg, "kind", kind)
	w.mu.Lock()
	cicadaMaster := w.mu.cicadaMaster
	w.mu.Unlock()
	if cicadaMaster {
		w.send(protocol.TypeCicadaWarning, &protocol.Custom{Data: map[string]any{"kind": kind, "message": msg}})
	}
}

// Warnings returns the self-diagnosis warning kinds issued so far.
func (w *Worker) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k := range w.mu.warned {
		out = append(out, k)
	}
	return out
}

// diagnoseStart logs the limits at start and warns about what can be
// known before any spawn (many ports of the default host in TIME_WAIT).
func (w *Worker) diagnoseStart() {
	if w.opts.DisableDiagnosis || w.opts.Runtime != nil { // a runtime holds no kernel sockets
		return
	}
	l, err := diag.ReadLimits()
	if err != nil {
		w.log.Debug("self-diagnosis: some limits are unknown", "err", err)
	}
	w.log.Info("load generator limits: " + l.String() + fmt.Sprintf(", %d source address(es)", max(len(w.opts.SourceIPs), 1)))
	plan := diag.Plan{PerDestination: map[netip.AddrPort]int{}, SourceIPs: len(w.opts.SourceIPs)}
	if d, ok := w.dest(w.env.defHost); ok {
		plan.PerDestination[d] = 0
	}
	w.check(l, plan, "")
}

// diagnoseSpawn checks the limits against a spawn's user count (and, at the
// first spawn of a test, against the test's total users over the expected
// workers), warning once per exceeded limit.
func (w *Worker) diagnoseSpawn(s *protocol.Spawn, newTest bool) {
	if w.opts.DisableDiagnosis || w.opts.Runtime != nil {
		return
	}
	var total int64
	for _, n := range s.UserClassesCount {
		total += max(n, 0)
	}
	users, note := total, ""
	if newTest {
		num, _ := optInt(s.ParsedOptions, "num_users")
		workers, _ := optInt(s.ParsedOptions, "expect_workers")
		if num > 0 && workers > 0 {
			if share := (num + workers - 1) / workers; share > users {
				users = share
				note = fmt.Sprintf("the test asks for %d users over %d expected worker(s); ", num, workers)
			}
		}
	}
	now := time.Now()
	if w.diag.checked && (users <= w.diag.users || users <= w.diag.headroom || now.Sub(w.diag.lastFull) < diagRecheck) {
		return // nothing new, within the limits read last time, or checked recently
	}
	w.diag.checked, w.diag.users, w.diag.lastFull = true, users, now
	l, err := diag.ReadLimits()
	if err != nil {
		w.log.Debug("self-diagnosis: some limits are unknown", "err", err)
	}
	// The users' own sockets are part of the plan, not of "in use".
	cs := w.conns.Snapshot()
	if l.FilesInUse >= 0 {
		l.FilesInUse = max(l.FilesInUse-cs.Open-cs.Connecting, 0)
	}
	plan := diag.Plan{Users: int(users), PerDestination: map[netip.AddrPort]int{}, SourceIPs: len(w.opts.SourceIPs)}
	for name, n := range s.UserClassesCount {
		if d, ok := w.dest(w.hostOfClass(name)); ok {
			plan.PerDestination[d] += int(max(n, 0))
		}
	}
	if total > 0 && users > total {
		for d, n := range plan.PerDestination { // scale to the projection
			plan.PerDestination[d] = int(int64(n) * users / total)
		}
	}
	w.diag.headroom = w.check(l, plan, note)
}

// check warns about every limit plan exceeds and returns the headroom.
func (w *Worker) check(l diag.Limits, plan diag.Plan, note string) int64 {
	var tw map[netip.AddrPort]int
	if len(plan.PerDestination) > 0 {
		dsts := make([]netip.AddrPort, 0, len(plan.PerDestination))
		for d := range plan.PerDestination {
			dsts = append(dsts, d)
		}
		var err error
		if tw, err = diag.TimeWait(dsts); err != nil {
			w.log.Debug("self-diagnosis: TIME_WAIT sockets unknown", "err", err)
		}
	}
	if w.diag.env == nil {
		e := diag.ReadEnv()
		w.diag.env = &e
		if e.Container {
			w.log.Info("load generator environment: " + e.String())
		}
	}
	for _, warn := range append(diag.Check(l, plan, tw), diag.CheckPod(*w.diag.env, l, plan)...) {
		w.warnOnce(warn.Kind, note+warn.Message)
	}
	return diag.Headroom(l, plan, tw)
}

// hostOfClass returns the base URL the users of the class the master calls
// name connect to.
func (w *Worker) hostOfClass(name string) string {
	for _, c := range w.classes {
		if c.def.Name == name {
			return w.env.hostFor(c.def)
		}
	}
	if len(w.classes) == 1 {
		return w.env.hostFor(w.classes[0].def)
	}
	return w.env.defHost
}

// dest resolves a base URL to the address connections go to (cached;
// names are resolved with a short timeout).
func (w *Worker) dest(base string) (netip.AddrPort, bool) {
	if base == "" {
		return netip.AddrPort{}, false
	}
	if d, ok := w.diag.dests[base]; ok {
		return d, d.IsValid()
	}
	if w.diag.dests == nil {
		w.diag.dests = make(map[string]netip.AddrPort)
	}
	var d netip.AddrPort
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" {
		port := u.Port()
		if port == "" {
			port = "80"
			if strings.EqualFold(u.Scheme, "https") {
				port = "443"
			}
		}
		p, _ := strconv.ParseUint(port, 10, 16)
		host := u.Hostname()
		addr, err := netip.ParseAddr(host)
		if err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			addrs, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			cancel()
			if lerr == nil && len(addrs) > 0 {
				addr, err = addrs[0], nil
			}
		}
		if err == nil {
			d = netip.AddrPortFrom(addr.Unmap(), uint16(p))
		}
	}
	w.diag.dests[base] = d
	return d, d.IsValid()
}

// optInt reads an integer option of a spawn's parsed_options.
func optInt(m map[string]any, key string) (int64, bool) {
	switch v := m[key].(type) {
	case int64:
		return v, true
	case uint64:
		return int64(v), true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// connCounters converts the worker's connection counters for a heartbeat.
func (w *Worker) connCounters() *protocol.ConnCounters {
	if w.opts.Runtime != nil {
		return w.opts.Runtime.Connections()
	}
	s := w.conns.Snapshot()
	c := &protocol.ConnCounters{
		Open:        s.Open + s.Connecting,
		Established: s.Open,
		Connects:    s.Connects,
		Reconnects:  s.Reconnects,

		TLSHandshakes:      s.TLSHandshakes,
		TLSResumed:         s.TLSResumed,
		TLSHandshakeMicros: s.TLSHandshakeTime.Microseconds(),
		H2GoAways:          s.H2GoAways,
		H2ResetStreams:     s.H2ResetStreams,
	}
	for i, n := range s.Closes {
		if n > 0 {
			if c.Closes == nil {
				c.Closes = make(map[string]int64)
			}
			c.Closes[httpc.CloseCause(i).String()] = n
		}
	}
	for i, n := range s.ConnectErrors {
		if n > 0 {
			if c.ConnectErrors == nil {
				c.ConnectErrors = make(map[string]int64)
			}
			c.ConnectErrors[httpc.Kind(i).String()] = n
		}
	}
	for i, n := range s.Errors {
		if n > 0 {
			if c.Errors == nil {
				c.Errors = make(map[string]int64)
			}
			c.Errors[httpc.Kind(i).String()] = n
		}
	}
	w.env.socks.counters.AddTo(c) // WebSocket and TCP tasks (socket.go)
	return c
}

// generatorFixes says, per generator-side kind, what to do about it.
var generatorFixes = map[httpc.Kind]string{
	httpc.PortsExhausted: "the load generator ran out of local ports (EADDRNOTAVAIL): use --source-ips or widen net.ipv4.ip_local_port_range",
	httpc.FileLimit:      "the load generator hit its open-files limit (EMFILE/ENFILE): raise ulimit -n (RLIMIT_NOFILE) or run more workers with fewer users each",
	httpc.NoBuffers:      "the load generator's kernel ran out of socket memory (ENOBUFS/ENOMEM): check net.ipv4.tcp_mem and free memory",
}

// checkGeneratorErrors warns (once per kind) when connects failed because
// of the load generator's own limits, so that such a run is not blamed on
// the server.
func (w *Worker) checkGeneratorErrors() {
	s := w.conns.Snapshot()
	for k, fix := range generatorFixes {
		if n := s.ConnectErrors[k]; n > 0 {
			w.warnOnce("errors: "+k.String(), fmt.Sprintf("%d connects failed: %s. These failures are the load generator's, not the server's.", n, fix))
		}
	}
}
