package web

import (
	"context"
	"errors"
	"time"
)

// Runner is everything the web server needs from the master (or a
// standalone runner): a read-only view of its state and statistics, and the
// three controls of Locust's web UI. The web package never imports master;
// cmd adapts the master to this interface.
//
// All methods are called concurrently from HTTP handlers and the history
// sampler and must be safe for that. Status and Snapshot are called on
// every poll of every browser and every Prometheus scrape, so they must be
// cheap and must not block on the network.
type Runner interface {
	// Status returns the current run state. The returned value is owned by
	// the caller (slices and maps are not modified afterwards).
	Status() Status

	// Stats returns the master's statistics (see StatsSource).
	StatsSource

	// Start starts a new test, or re-ramps a running one (an "edit"), as
	// Locust's POST /swarm does (locust/web.py 2.12.1 swarm()). It must
	// return promptly: the ramp-up continues in the background, and a new
	// Start replaces a ramp-up that is still in progress. When the state is
	// ready or stopped it is a new test and statistics are cleared; while
	// spawning or running, statistics are kept. A master without workers
	// logs Locust's warning and returns nil (Locust answers success: true).
	// An error is reported to the client as {"success": false, "message":
	// err.Error()}. ctx is the HTTP request's context: it ends with the
	// response, so the background ramp-up must not use it.
	Start(ctx context.Context, req StartRequest) error

	// Stop stops the test and returns when users have stopped, or when ctx
	// is done (Locust's GET /stop is synchronous; ctx is the request's, or
	// a 2-minute context for the run_time timer). Stopping an idle runner
	// is not an error.
	Stop(ctx context.Context) error

	// ResetStats zeroes statistics, errors and exceptions, keeping the
	// entries (Locust's GET /stats/reset: Locust 2.12.1 locust/web.py,
	// reset_stats in WebUI.__init__).
	ResetStats()
}

// StartRequest is a parsed POST /swarm form.
type StartRequest struct {
	// Users is the target number of users (form field user_count).
	Users int
	// SpawnRate is users started per second (form field spawn_rate).
	SpawnRate float64
	// Host is the new target host with '<' and '>' removed, or nil when the
	// form had no host field (keep the current host).
	Host *string
	// RunTime is the parsed run_time field, 0 if absent or empty. The web
	// Server schedules the Stop for it itself (never cancelled, exactly as
	// Locust does); it is passed on for information only, and runners must
	// not schedule their own stop for it.
	RunTime time.Duration
	// UserClasses lists the user_classes fields (class picker), nil if none.
	UserClasses []string
	// Options holds every other form field, for locustfile-defined custom
	// options that Locust updates by name. Runners ignore unknown names.
	Options map[string][]string
}

// Status is a point-in-time view of the runner.
type Status struct {
	// State is one of Locust's runner states (the protocol.State*
	// constants). The web package only compares against ready, stopped,
	// spawning and running; other strings are passed through to clients.
	State string
	// UserCount is the number of running users (master: the sum last
	// reported by workers).
	UserCount int
	// Host is the target host, "" when none is set (JSON null).
	Host string
	// Distributed reports whether this is a master: /stats/requests then
	// carries "workers" and "worker_count".
	Distributed bool
	// Workers lists connected workers. A standalone runner may list its
	// in-process worker: routes and metrics show workers only when
	// Distributed, and the history then uses them only for its connection
	// charts.
	Workers []WorkerInfo
	// UserClassesCount is the number of running users per class.
	UserClassesCount map[string]int64
	// FinalUserClassesCount is UserClassesCount at the moment the last
	// test began stopping (Locust's final_user_classes_count); empty before
	// any stop. The HTML report's final ratios use it once the state is
	// stopping or stopped, as Locust 2.12.1's html.py does.
	FinalUserClassesCount map[string]int64
	// Shape reports that a load shape drives the test: the dashboard
	// disables its user and spawn rate inputs with the reason, POST /swarm
	// needs neither field, refuses a run_time, and refuses to edit a
	// running test instead of ignoring the new numbers.
	Shape bool
	// UserClasses describes the User classes and their tasks, for /tasks.
	UserClasses []UserClass
	// Locustfile is the scenario file name shown in the UI and report.
	Locustfile string
	// StartTime is when the current (or last) test started; zero if never.
	// It must change when a new test starts: the chart history is cleared
	// then, as Locust clears its history with the statistics.
	StartTime time.Time
	// ConfiguredUsers, ConfiguredSpawnRate and ConfiguredRunTime prefill
	// the start form (-u, -r, -t). Zero values leave the fields empty.
	ConfiguredUsers     int
	ConfiguredSpawnRate float64
	ConfiguredRunTime   time.Duration
}

// WorkerInfo is one worker as the master sees it.
type WorkerInfo struct {
	// ID is the worker's node id, "<hostname>_<32 hex>" for Locust workers.
	ID string
	// State is ready, spawning, running, stopped or missing.
	State string
	// UserCount is the number of users the worker last reported.
	UserCount int
	// CPUUsage is the worker's last reported CPU usage in percent.
	CPUUsage float64
	// MemoryUsage is the worker's last reported RSS in bytes, -1 if unknown.
	MemoryUsage int64
	// Connections is the number of open client connections the worker
	// reported, -1 if unknown (Python workers do not report it).
	Connections int
	// Dropped counts the arrival-rate iterations the worker dropped in the
	// current test (issue 13).
	Dropped int64
	// Conn details the worker's connection counters, nil if unknown.
	Conn *ConnStats
}

// ConnStats are a cicada worker's connection counters (cumulative since
// the worker started, except Open and Established).
type ConnStats struct {
	// Open counts sockets (connecting and established), Established the
	// established connections.
	Open, Established int64
	// Connects and Reconnects count successful connects; Reconnects
	// replaced an earlier connection of the same user.
	Connects, Reconnects int64
	// ConnectsPerSec is the connect rate between the last two heartbeats.
	ConnectsPerSec float64
	// Closes counts closed connections by cause.
	Closes map[string]int64
	// ConnectErrors counts failed connects by kind, Errors failed requests
	// on open connections by kind. GeneratorSide tells which kinds are the
	// load generator's own fault.
	ConnectErrors, Errors map[string]int64
	// GeneratorSide reports whether a failure kind is the load generator's
	// fault. Nil means none is.
	GeneratorSide func(kind string) bool
	// TLSHandshakes and TLSResumed count completed full and resumed TLS
	// handshakes, TLSHandshakeTime their summed time;
	// TLSHandshakesPerSec is the handshake rate between the last two
	// heartbeats. H2GoAways and H2ResetStreams count received HTTP/2
	// GOAWAY and RST_STREAM frames.
	TLSHandshakes, TLSResumed int64
	TLSHandshakeTime          time.Duration
	TLSHandshakesPerSec       float64
	H2GoAways, H2ResetStreams int64
}

// UserClass describes one User class for the task-ratio view (/tasks).
type UserClass struct {
	Name string
	// Tasks lists the class's tasks with their weights. A task with
	// sub-tasks is a nested TaskSet.
	Tasks []Task
}

// Task is a weighted task, or a nested TaskSet when Tasks is non-empty.
type Task struct {
	Name   string
	Weight int
	Tasks  []Task
}

// LogSource is an optional interface of a Runner that keeps recent log
// lines, served by GET /logs. LogBuffer implements the master half.
type LogSource interface {
	// Logs returns the master's recent lines and the latest batch sent by
	// each worker, keyed by worker id. The result is owned by the caller.
	Logs() Logs
}

// Logs is the body of GET /logs.
type Logs struct {
	Master  []string
	Workers map[string][]string
}

// Errors of this package.
var (
	// ErrBadAuth is returned by Run and Serve when Options.Auth is not of
	// the form user:pass.
	ErrBadAuth = errors.New("web: credentials supplied with --web-auth should have the format: username:password")
	// ErrClosed is returned by Serve when the Server was already used.
	ErrClosed = errors.New("web: server closed")
	// ErrTLSPair is returned by Listen, Run and Serve when only one of
	// Options.TLSCert and Options.TLSKey is set: HTTPS needs both, and
	// serving plain HTTP instead would not honour the option.
	ErrTLSPair = errors.New("web: a TLS certificate and its key must be given together (--tls-cert and --tls-key)")
)
