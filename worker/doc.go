// Package worker is cicada's Locust worker: it joins a Locust 2.x (or
// cicada) master over ZeroMQ, runs the users the master asks for and reports
// Locust-compatible stats, as `locust --worker` does on the wire (the
// behaviour of locust/runners.py WorkerRunner at 2.12.1 and upstream).
//
// A Scenario lists UserClasses; each has weighted (or sequential) Tasks,
// optional OnStart/OnStop and a WaitTime (Constant, Between,
// ConstantPacing, ConstantThroughput, with Locust's semantics). Tasks are Go
// functions that use the User's HTTP client (User.Do, User.DoDiscard,
// User.HTTP) or report any timed action with User.Record. Package
// scenario (at the top of the module) builds a Scenario from a YAML file
// instead.
//
// Failures are grouped as Locust's HttpSession groups them: a 4xx/5xx
// response to a request with a Name fails with requests' HTTPError text
// naming the Name instead of the URL ("404 Client Error: Not Found for
// url: /item/[id]"), so a task with dynamic URLs and one name makes one
// failure row. Unlike Locust, responses checked with an Expect (cicada's
// catch_response) are named the same way.
//
//	w, err := worker.New(worker.Options{MasterHost: "10.0.0.1"}, sc)
//	if err != nil { ... }
//	err = w.Run(ctx) // until the master's quit, or Quit
//
// Main does the same for a whole program, with Locust's worker flags.
//
// Protocol behaviour, beyond what a Python worker does:
//   - client_ready carries the int -1, which every 2.x master accepts
//     without a version warning;
//   - spawn, spawning_complete and heartbeats are sent only while the
//     master has acknowledged the worker (a Python master's receive loop
//     dies on some of them from unknown workers);
//   - at a stop, a stats report precedes client_stopped, so the requests
//     that ended within the stop timeout reach a master that quits right
//     after the stop (a Python worker leaves them to its next periodic
//     report);
//   - after a lost connection the worker registers again, so a restarted
//     master finds it (Python workers stay zombies);
//   - an unknown user class in a spawn is reported to the master as an
//     exception (a Python worker hangs in spawning), once per class and
//     test, all classes of one spawn in one report; a scenario with one
//     class serves any class name (unless Scenario.ExactClassNames);
//   - a spawn asking for more users than Options.MaxUsers (by default twice
//     the open-files limit: each HTTP user holds a connection) runs that many,
//     each class its share, with an ERROR and an exception to the master
//     (ErrTooManyUsers); spawning_complete reports the users that run.
//     Users start in batches outside the pool lock, so heartbeats, stats
//     and a newer spawn, stop, quit or signal are served while thousands
//     start;
//   - a spawn whose timestamp is not a finite positive number, or is more
//     than MaxSpawnClockSkew ahead of the worker's clock, is refused with an
//     ERROR and an exception (ErrBadSpawn): a Python worker would discard
//     every later spawn as older;
//   - log lines and exception messages that the master's messages can make
//     the worker repeat (unknown classes, refused spawns, malformed or
//     unknown messages) go out at most once per Options.RepeatInterval and
//     cause (package internal/ratelimit); the repeats are counted and
//     summarised in a later line;
//   - a worker that did not run for a while (SIGSTOP, a paused VM: a gap
//     between its heartbeat ticks over a quarter of
//     Options.MasterHeartbeatTimeout) gives the master a fresh timeout
//     instead of quitting on its first tick after resuming (a Python
//     worker quits);
//   - at quit, in-flight tasks get Options.QuitTimeout to finish, so the
//     final stats report, sent before quit, holds every request;
//   - heartbeats carry the worker's connection counters (open, established,
//     connects, reconnects, closes by cause, connect errors and errors by
//     kind) under the extra key "cicada_connections", which Python masters
//     ignore;
//   - the worker diagnoses its own host (package diag): at start and when
//     a spawn asks for more users than its open-files limit, the system file
//     limit or the local ports (port range × Options.SourceIPs, less
//     TIME_WAIT) allow, it logs a warning naming the limit and the fix and
//     sends it to the master as "cicada_warning" (once per limit); connect
//     failures caused by the generator itself (EADDRNOTAVAIL, EMFILE,
//     ENFILE, ENOBUFS) are warned about the same way;
//   - on a cicada master's "cicada_second_round" every user sends its last
//     request again on the connection it holds, and the worker answers with
//     how many reused it (Worker.SecondRound).
//
// Tasks may also be given as data (Task.Requests, UserClass.OnStartRequests
// and OnStopRequests: HTTP requests with their checks); package scenario
// fills them beside the functions it builds. A Runtime (Options.Runtime)
// runs the users in another engine than the goroutine pool, through a small
// seam: Start (with the worker's stats Recorder), Spawn to absolute
// per-class counts, Stop with a grace, Users, Connections (the heartbeat's
// counters), SecondRound and Close. The worker keeps the protocol, the
// user ceiling, unknown classes, spawning_complete, the stop and quit
// sequences, heartbeats and stats reports. Package dataplane/users is the
// data plane's runtime: users as connection records, which runs only
// tasks given as data.
//
// Tags (Task.Tags; Locust's @tag) select a test's tasks as Locust's -T/-E
// do (FilterTasks): the master's spawn message carries "tags" and
// "exclude_tags" in parsed_options (a Python master always does), else
// the worker's own Options.Tags and ExcludeTags apply. Tags that match no
// task are a warning; a class left without tasks spawns and reports
// Locust's "No tasks defined" exception at each step (at least NoTaskWait
// apart, where Locust spins on a zero wait). The selection is computed
// anew at the start of each test; a Python worker filters once per process.
//
// Each HTTP request's phases (DNS, connect, TLS, time to first byte, body;
// httpc.Phases) are recorded beside its response time and sent in the
// stats report under "cicada_phases" (package stats), which Python masters
// ignore.
//
// A request whose success depends on more than an Expect goes through
// User.DoCheck with a Checker (package scenario's captures and body
// checks); Request.Dynamic marks requests that are not fixed data, which a
// data runtime refuses. User.Index and Worker.CicadaMaster serve the
// scenario's generators and unique feeds.
//
// Task.Socket gives a WebSocket or raw TCP task as data (SocketFunc,
// User.SocketStep, User.WebSocket, User.TCPConn; package worker/sockc):
// the user holds the connection across tasks, each exchange is a request
// of method "WS" or "TCP" in the stats, and the socket counters (closes
// by side and WebSocket close code) join the heartbeat's.
//
// Options.SourceIPs binds the users' connections to local addresses in turn,
// each giving a full ephemeral port range per destination, so one worker
// can hold more than ~64k connections to one server address.
//
// Users cost little while they wait: no goroutine runs for a waiting user
// (its next task is scheduled with a timer), so a worker holds tens of
// thousands of idle keep-alive users at a few KiB each. See LOCKS.md for the
// goroutines and the lock order.
//
// Arrival rate (issue 13; rate.go): SetRate, or a cicada master's
// cicada_rate message, puts the worker in the open model: its users park
// between iterations and a pacer starts one user's next task at each due
// time of an even schedule; an iteration due while every user is busy is
// dropped and counted (stats report key cicada_dropped). Requests of a
// paced iteration are recorded with their service time in Locust's fields
// and with the time from the due moment in the exact histogram.
package worker
