// Package users runs a cicada worker's users on the data plane: users are
// connection records of client stacks (package dataplane/stack, one stack
// per engine core) running a stack.Program compiled from the scenario, and
// the worker (package worker) keeps the Locust protocol and the stats
// reports. It is the only package under dataplane/ that imports the rest of
// cicada (worker, stats, protocol, worker/httpc).
//
//	rt, err := users.New(users.Options{Link: users.LinkAFPacket, Interface: "eth1",
//		ClientIP: netip.MustParseAddr("198.18.0.2"), ClientIPs: 4}, f.Scenario)
//	w, err := worker.New(worker.Options{Runtime: rt, MaxUsers: rt.MaxUsers()}, f.Scenario)
//
// The links: LinkAFPacket (a fanout group for several cores), LinkAFXDP
// (one core), or LinkDPDK (one core; Options.DPDK holds the EAL
// arguments and the port) in a binary built with the dpdk tag, refused
// with dpdk.ErrUnsupported in others.
//
// # What runs, and what is refused
//
// Each scenario class becomes a Program class: its tasks' requests (given
// as data, worker.Task.Requests, which package scenario fills), weights or
// sequential order, wait time (worker.WaitSpec: constant, between,
// constant_pacing, constant_throughput) and on_start requests. Each request
// is built once, when the host is known, with stack.BuildRequest: request
// line, Host, User-Agent and Accept as the kernel worker sends them, the
// scenario's and the request's headers, Content-Length and the body.
//
// New refuses, with an error wrapping ErrRefused that names the class,
// task, request and field: Go task, on_start or wait functions without
// their data form; on_stop (a stopped user's connection is closed, nothing
// more is sent); cookies (the stacks keep none: set http.disable_cookies:
// true); following redirects (set http.max_redirects: 0; a 3xx counts as
// its own status); http.connect_timeout; TLS (an https:// host); hosts that
// are not an IPv4 literal (no DNS; the port defaults to 80, a path prefix
// is kept); classes with different hosts (one server address); absolute
// URLs in paths; checks.body_contains (no bodies are kept) and
// checks.max_response_time; requests larger than one segment (the link's
// MTU − 40); more users than client IPs × ports; a tuple space whose
// tables do not fit in the available memory (ifcheck.CheckTable); whatever
// the stack's Program refuses (weights above stack.MaxWeight, constant_throughput below
// one task in 11.6 days, more requests or classes than its limits): New
// has the stack compile the Program on a one-record stack. A master's host (-H) is
// checked at its spawn, which then fails with the same kind of error (the
// worker reports it to the master as an exception).
//
// Deliberate differences from the kernel worker: no Accept-Encoding is
// sent (bodies are not decoded, so none is asked for; sizes are then the
// decoded sizes the kernel worker reports); failure texts of statuses use
// the standard reason phrase (the stack keeps none); a connect that fails
// reads "cicada: data plane: connect failed (...)" because the stack does
// not tell a reset SYN from an unanswered one; the exact latency histogram
// has Locust's bucket resolution (stats.Bulk.Exact), the stack keeping
// only Locust's buckets and microsecond sum, minimum and maximum.
//
// # Runtime behaviour
//
// The stacks and their connection tables are built when the first spawn
// fixes the host, and rebuilt (after the users stopped) if a later spawn
// changes it. Each class's count is spread over the cores (remainders
// rotating); each core's engine Tick launches toward its share at
// Options.ConnectRate new users per second (a token bucket holding a
// hundredth of a second's worth, so a spawn of 100,000 users does not send
// 100,000 SYNs at once) and stops its surplus with StopClass (a user
// awaiting a response finishes it first). Spawn returns once every class
// holds exactly its users (launched: open or opening), or with an error
// after SpawnStall without progress (naming an unresolved next hop). Once
// a second (engine Every) each core's stats rows go to the
// worker's recorder with stats.Recorder.RecordBulk; Stop also flushes them
// after waiting up to its grace for the connections to close, so the
// worker's final report holds every finished request. The heartbeat's
// connection counters come from the engine's counters (at most a second
// old); dperf's detail counters are logged every Options.DetailInterval.
// SecondRound first waits for a running Spawn to end (bounded by the
// round's context: a round the master starts when its ramp ends would
// otherwise miss the users still being launched, or every user while the
// stacks are being built), then runs each stack's SecondRound, which takes
// in every live user (busy and connecting ones when their task ends; at
// most stack.DefaultSecondRoundWindow requests in flight per stack), and
// waits until each is counted: Reused, or Failed by kind (lost before its
// request went, failed or not accepted, no answer in time, the spawn not
// ended in time). Unlike the goroutine worker it never reconnects a user
// for the round (Reconnected is 0): a user without a connection is lost.
//
// Locks (LOCKS.md): Runtime.mu guards the engine's life; it is never taken
// on an engine core (Tick and Every read only what is set before the
// engine starts, the core's own state and atomics), because Spawn's setup
// and Stop hold it while engine.Do waits for the cores. Users and
// Connections, which heartbeats call, take no lock that a spawn holds.
package users
