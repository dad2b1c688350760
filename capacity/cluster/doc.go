// Package cluster runs `cicada bench`'s trials across a cluster of cicada
// workers (issue 17: "standalone or across a cluster of workers").
//
// A Controller binds a ZeroMQ ROUTER port and speaks Locust's protocol
// (package protocol, protocol/zmtp) as a master does: it acknowledges
// client_ready, reads heartbeats and echoes one now and then, and ends with
// quit. The trials travel as custom messages (Locust's register_message), so
// the ordinary Go worker (`cicada --worker --master-host H`) joins a bench
// controller with nothing else to start: cmd/cicada installs an Agent on every
// worker, which answers the controller's hello and runs the trials it is sent
// with package capacity/probe on the worker's kernel sockets.
//
// The exchange (types and keys in messages.go; every decoder bounds its
// input and is fuzzed):
//
//	M→W cicada_bench_hello   {"v"}                       after the ack
//	W→M cicada_bench_ready   {"v", "runtime", "refuse"}  the agent's answer
//	M→W cicada_bench_trial   {"id", "test", "load", "probe": {..., "tls", "mix"}}
//	W→M cicada_bench_held    {"id"}                      concurrent: all opened
//	M→W cicada_bench_go      {"id", "abort"}             concurrent: second round
//	W→M cicada_bench_result  {"id", "error", "options", counts, "latency": bin,
//	                          "generator_strain", "tls", "mix", ...}
//	M→W cicada_bench_abort   {"id"}                      a trial given up
//
// Split (Split): a rate (cps, teardown, tps, throughput) is split evenly;
// a number of connections (concurrent) is split evenly with the remainder
// spread one each over the first workers; tps and throughput's Conns (the
// keep-alive connections) is the total over the cluster, split the same way,
// so the device sees as many connections as in a standalone run with the
// same --conns (each worker needs at least one). Window, the connects in
// flight while opening, is each worker's own. The trial messages go out
// back to back; the concurrent test adds a barrier: every worker reports its
// connections open (held) before any of them starts the second round, so
// the device holds the sum at once.
//
// Merge: attempted, failed, achieved, bytes, the second round and the
// errors by kind are summed; the duration is the longest; the latency
// percentiles come from the workers' merged exact histograms (package
// stats' encoding, within stats.ExactRelativeError), never from an average
// of percentiles, and the maximum is the largest. A generator limit of any
// worker makes the merged trial's, prefixed with the worker's name, and so
// does a generator strain (which invalidates the trial only if it failed,
// capacity.Criteria.Judge). Over TLS the handshakes are summed and a
// negotiated version, cipher suite or group the workers disagree on is
// Mixed ("mixed"); a traffic mix's counts are summed per object size.
//
// HTTPS and mixes (variants.go; exchange version 2, so that a version 1
// worker, which would run them as plain HTTP, is refused): the trial spec
// carries the controller's TLS flag values (TLSOptions), not a built
// configuration, and the mix; every worker builds its tls.Config with
// AgentOptions.TLS (cmd/cicada: the standalone bench's function), reading
// the CA, certificate and key files on the worker. A worker that cannot
// (a file missing, no builder, a data plane) answers an options error and
// Controller.Trial returns ErrWorkerOptions at once (cmd/cicada: exit 2).
// Each worker draws its share's mix sizes as a standalone prober does
// (arrival i of its share), so the workers fetch the same sequence.
//
// Liveness: a worker that disconnects, quits or sends nothing for
// Options.HeartbeatTimeout, or whose result has not come by the trial's
// deadline, is lost: the trial is INVALID ("worker X lost: ...", a
// generator limit) and every later trial too, so the search stops there
// (exit 3 in cmd/cicada) and never reports a maximum the cluster did not
// measure. Waiting for the workers is bounded by Options.WaitTimeout.
// On the worker's side, a trial whose controller is gone (the worker no
// longer registered with it, AgentOptions.Connected) is stopped after
// AgentOptions.ConnectionGrace (10 s), not at the worker's 60 s master
// heartbeat timeout.
//
// Refusals: a Python Locust worker (its client_ready carries a version
// string) cannot run trials: it is logged as refused and sent quit, and
// does not count towards the expected workers. A worker whose runtime
// does not run the search's test (named in hello) refuses in its ready
// answer and is treated the same way: cmd/cicada gives a data-plane worker
// (--dataplane afpacket) an agent whose trials are capacity/dpprobe's (cps,
// concurrent, teardown) over its own AF_PACKET socket on the worker's
// interface, first client address and client ports (AgentOptions.Trial and
// Tests); other links, and the other tests, are refused.
//
// Differences from a Locust master: no users are dispatched and no web UI
// is served; the workers' stats messages are read only as signs of life;
// heartbeats are echoed at most every 5 s per worker (enough to arm a
// worker's 60 s master timeout); frames above MaxMessage are refused by the
// transport; malformed messages are dropped with at most one warning a
// second (a flood of them does not flood the log); at most 10,000 worker
// identities are kept (one gone and never picked is forgotten to make room
// for a new one).
//
// Deliberate differences from a standalone search: the percentiles are
// those of the exact histogram (±0.39 %) rather than nearest-rank over the
// raw samples, and the workers start a trial when its message arrives (the
// skew is the controller's send loop and the network's latency).
package cluster
