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
// Generator limits: every trial checks its own process and host. It sets
// Trial.GeneratorLimit (the search then marks it invalid) when
//
//   - package diag's limits (open files, system files, the port range less
//     TIME_WAIT towards the target) are below what the trial needs, before it
//     starts;
//   - a connect fails with EMFILE, ENFILE or EADDRNOTAVAIL;
//   - the in-flight cap (Options.MaxInFlight) held an arrival back;
//
// and Trial.GeneratorStrain (which invalidates the trial only if it failed,
// see package capacity) when
//
//   - the process used more than Options.CPUBusy of its cores (getrusage:
//     "CPU saturated"), or its CPU time and its threads' wait for a core
//     (the run delay of /proc/self/task/*/schedstat, Linux) together passed
//     it ("CPU starved": the host's other load took the cores the generator
//     asked for, which its own CPU time alone does not show);
//   - more than Options.LateRatio of the arrivals were issued more than
//     Options.LagTolerance after they were due (the pacer fell behind).
//
// HTTPS (Options.TLS, tls.go) and traffic mixes (Options.Mix, mix.go) are
// described in those files: a TLS handshake on every new connection (full
// unless the configuration caches sessions), the negotiated parameters in
// Trial.TLS; /bytes/N sizes drawn per arrival, counted in Trial.Mix, a
// throughput trial of a mix paced by bytes.
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
