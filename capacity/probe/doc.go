// Package probe runs the trials of `cicada bench` over kernel sockets: one
// function per RFC 3511 / RFC 9411 benchmark, each returning a
// capacity.Trial for package capacity's search to judge.
//
//	Concurrent  connections held at once, then a second round (RFC 3511 5.2, RFC 9411 7.5)
//	CPS         new connections per second, open loop (RFC 3511 5.3, RFC 9411 7.2)
//	Teardown    connections closed per second (RFC 3511 5.4)
//	TPS         HTTP transactions per second on keep-alive connections (RFC 3511 5.7)
//	Throughput  Mbit/s of HTTP objects of one size (RFC 3511 5.6, RFC 9411 7.3)
//
// Rates are paced open loop: arrival i is due at i/rate after the trial's
// start (Due, a pure function), is issued when due whatever earlier arrivals
// are doing, and its latency counts from when it was due, so queueing inside
// the generator is not hidden (no coordinated omission).
//
// Generator limits: every trial checks its own process and host, and sets
// Trial.GeneratorLimit (the search then marks it invalid) when
//
//   - package diag's limits (open files, system files, the port range less
//     TIME_WAIT towards the target) are below what the trial needs, before it
//     starts;
//   - a connect fails with EMFILE, ENFILE or EADDRNOTAVAIL;
//   - the process used more than Options.CPUBusy of its cores (getrusage);
//   - more than Options.LateRatio of the arrivals were issued more than
//     Options.LagTolerance after they were due (the pacer fell behind), or
//     the in-flight cap (Options.MaxInFlight) held one back.
//
// Achieved rates divide by the trial's length from its start to the last
// answer (at least the planned Duration): a device that queues the load
// (a token bucket) stretches the trial, and its achieved rate is what it
// passed, not what was offered.
//
// A device that answers slowly is not a generator limit: TPS and Throughput
// keep Options.Conns connections, and a device slower than Conns divided by
// its latency fails the trial by achieved rate or latency (raise Conns to
// offer more).
//
// Connections close as the test asks: CPS over HTTP asks the server to close
// (Connection: close) so that TIME_WAIT stays on the server, CPS over bare
// TCP and Teardown close with a FIN, Concurrent closes its held connections
// with a reset (SO_LINGER 0) once the trial is over, leaving the device no
// TIME_WAIT state to count against the next trial.
package probe
