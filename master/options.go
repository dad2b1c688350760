package master

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cicada-load/cicada/master/dispatch"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/thresholds"
)

// Defaults for the zero values of Options. The timings are Locust's
// (Locust 2.12.1 locust/runners.py: HEARTBEAT_INTERVAL, HEARTBEAT_LIVENESS,
// HEARTBEAT_DEAD_INTERNAL; locust/stats.py: CONSOLE_STATS_INTERVAL_SEC,
// CSV_STATS_INTERVAL_SEC).
const (
	DefaultBindHost          = "*"
	DefaultBindPort          = 5557
	DefaultExitCodeOnError   = 1
	DefaultHeartbeatInterval = time.Second
	DefaultHeartbeatLiveness = 3
	// DefaultHeartbeatEchoInterval: workers quit after 60 s without a
	// master heartbeat; one every 20 s gives three chances over TCP, which
	// loses none, and each echo is a write system call: with 16,000
	// workers, echoes every 10 s took a tenth of the master's CPU.
	DefaultHeartbeatEchoInterval = 20 * time.Second
	// DefaultPollInterval is the master's zmtp.Options.PollInterval when
	// Options.Transport leaves it zero: the workers' messages are read in
	// rounds at most every 10 ms, so that thousands of workers cost the
	// master a hundred wake-ups a second, not one per message (a wake-up
	// cost 50-80 µs of CPU on the VMs measured). Locust's messages
	// (heartbeats every second, reports every 3 s) do not notice 10 ms.
	DefaultPollInterval    = 10 * time.Millisecond
	DefaultDeadTicks       = 60
	DefaultReportWait      = time.Second
	DefaultStatsInterval   = 2 * time.Second
	DefaultCSVInterval     = time.Second
	DefaultWaitLogInterval = time.Second
	DefaultShapeTick       = time.Second
	DefaultStopWait        = 60 * time.Second
	DefaultStopQuitGrace   = 3 * time.Second
	// DefaultFinalReportGrace is how long after a stats report received
	// after quit the master still waits for the worker's quit message
	// (which follows the final report) before taking that report as final.
	DefaultFinalReportGrace = 2 * time.Second
)

// Errors returned by New, Run and the control methods.
var (
	// ErrBind means the worker port could not be bound (busy, or a bad host).
	ErrBind = errors.New("master: cannot bind the worker port")
	// ErrOptions means inconsistent Options.
	ErrOptions = errors.New("master: invalid options")
	// ErrCSV means a CSV file could not be created or written.
	ErrCSV = errors.New("master: CSV file")
	// ErrBadSpawnRate means a spawn rate outside dispatch.MinSpawnRate to
	// dispatch.MaxSpawnRate, or not a number. It is dispatch.ErrBadRate.
	ErrBadSpawnRate = dispatch.ErrBadRate
	// ErrBadUserCount means a user count that is negative or above
	// dispatch.MaxUsers. It is dispatch.ErrBadTarget.
	ErrBadUserCount = dispatch.ErrBadTarget
	// ErrNoUserClasses means a test was started before any user class was
	// known (none in Options, and no worker has reported its classes yet).
	ErrNoUserClasses = errors.New("master: no user classes known yet")
	// ErrClosed is returned by Run when called twice, and by the control
	// methods once Run has returned.
	ErrClosed = errors.New("master: closed")
)

// UserClass is a user class as the master dispatches it. It is the
// dispatcher's type: Name, Weight (0 means 1) and FixedCount.
type UserClass = dispatch.UserClass

// Stage is one step of a load shape, with the semantics of Locust's
// StagesShape example: until Duration has passed since the test started,
// run Users users, reaching them at SpawnRate users per second. Durations
// are cumulative (each larger than the previous one). After the last stage
// the test ends (headless: the master quits; otherwise the test stops).
// Package scenario reads stages from a YAML file into this type.
type Stage struct {
	Duration time.Duration
	// Users is at most dispatch.MaxUsers.
	Users int
	// SpawnRate is users per second. If zero, 1. From
	// dispatch.MinSpawnRate to dispatch.MaxSpawnRate.
	SpawnRate float64
}

// Options configure a Master. The zero value works: a master on *:5557
// that waits for commands (Start, Stop, Quit), with Locust's timings. User
// classes are then learned from the first worker that reports them.
type Options struct {
	// BindHost is the interface to listen on; "*" (the default) means all
	// interfaces, IPv4 and IPv6.
	BindHost string
	// BindPort is the worker port. If zero, DefaultBindPort; if negative,
	// an ephemeral port (Locust's --master-bind-port 0), see Addr.
	BindPort int

	// Headless runs a test on its own, as locust --headless: wait for
	// ExpectWorkers, start Users at SpawnRate (or the Stages), stop after
	// RunTime, quit, print the summary. Otherwise the test is driven
	// through Start, Stop and Quit (the web UI).
	Headless bool
	// Autostart runs a test on its own while keeping the control methods
	// (the web UI), as locust --autostart: it waits for the workers and
	// starts as Headless does, and after RunTime stops the test (instead of
	// quitting) and quits Autoquit later. Ignored when Headless is set.
	Autostart bool
	// Autoquit is how long an autostarted master keeps running after the
	// test stopped at RunTime before it quits (--autoquit). Negative means
	// never; zero quits at once.
	Autoquit time.Duration
	// ExpectWorkers is the number of workers in state ready that a headless
	// or autostarted master waits for before it starts. If zero, 1.
	ExpectWorkers int
	// ExpectWorkersMaxWait bounds that wait; Run then returns exit code 1.
	// Zero means forever.
	ExpectWorkersMaxWait time.Duration
	// Users is the headless number of users. If zero, 1. At most
	// dispatch.MaxUsers.
	Users int
	// SpawnRate is the headless spawn rate, users per second. If zero, 1.
	// From dispatch.MinSpawnRate to dispatch.MaxSpawnRate.
	SpawnRate float64
	// Host is the target host sent to workers; "" sends nil. It must pass
	// CheckHost.
	Host string
	// RunTime limits a headless or autostarted test, counted from its
	// start (after the wait for workers). Zero means no limit.
	RunTime time.Duration
	// StopTimeout is the graceful stop time sent to workers in every spawn
	// message (--stop-timeout). When it is positive, a quit (the run time's
	// end, a signal, Quit) first stops the test, so that in-flight tasks
	// get it as in Locust standalone, and quits once the workers report no
	// users, or StopTimeout+StopQuitGrace later.
	StopTimeout time.Duration
	// Standalone means the workers are this process's own (cicada without
	// --master or --worker): the master logs as Locust standalone does.
	// The wait for the workers and their registrations are not logged
	// (DEBUG), a start logs "Ramping to N users at a rate of R per second"
	// instead of "Sending spawn jobs", and the connections table has one
	// Total row, titled "Connections". The wait for the workers is polled
	// every few milliseconds, not every WaitLogInterval.
	Standalone bool
	// StopQuitGrace is how long beyond StopTimeout a quit waits for the
	// workers to report their users stopped. If zero,
	// DefaultStopQuitGrace.
	StopQuitGrace time.Duration
	// ResetStats resets the statistics once spawning is complete.
	ResetStats bool
	// EnableRebalancing re-dispatches users as soon as a worker joins or
	// goes missing while the test runs (--enable-rebalancing). Without it
	// the master still re-dispatches when a worker joins, quits or is
	// deleted, as Locust does.
	EnableRebalancing bool
	// UserClasses are the classes to dispatch. Python workers are only
	// known by their class names, so the master's list comes from here
	// (the scenario's classes, or names with weight 1). If empty, the
	// class names of the first worker stats report that lists any are
	// used, with weight 1.
	UserClasses []UserClass
	// Stages is an optional load shape; Users, SpawnRate and RunTime are
	// then ignored (RunTime must be zero, as in Locust).
	Stages []Stage
	// Rate, if set, makes the test an arrival-rate test (rate.go, issue
	// 13): Users is then the cap on in-flight iterations. Rate stages with
	// durations end the test after the last one, counted from the start of
	// the schedule (RunTime must then be zero).
	Rate []RateStage
	// ParsedOptions is sent to workers as the spawn message's
	// parsed_options (Python workers take custom options, tags and
	// exclude_tags from it). Nil sends {}.
	ParsedOptions map[string]any

	// CSVPrefix, if set, writes PREFIX_stats.csv, PREFIX_failures.csv,
	// PREFIX_exceptions.csv (rewritten every second) and
	// PREFIX_stats_history.csv (appended every second), flushed and
	// completed at exit. Missing directories are created.
	CSVPrefix string
	// CSVFullHistory adds a row per entry to the history file.
	CSVFullHistory bool
	// PrintStats prints the periodic table even when not headless.
	PrintStats bool
	// OnlySummary suppresses the periodic table.
	OnlySummary bool
	// SecondRound: once all users are spawned, every cicada worker's users
	// send one more request on their existing connection (RFC 3511 §5.2);
	// the master logs "Second round: N users, N reused their connection,
	// N reconnected, N failed", and Run returns exit code 1 unless every
	// user reused its connection.
	SecondRound bool
	// SecondRoundTimeout bounds the wait for the workers' second-round
	// results. If zero, DefaultSecondRoundTimeout.
	SecondRoundTimeout time.Duration
	// ExitCodeOnError is the exit code of a run with failures or
	// exceptions. If nil, DefaultExitCodeOnError.
	ExitCodeOnError *int
	// StatsFormat lays out tables and CSV files (name width, exact
	// percentiles). The zero value prints as a Locust 2.12.1 master does.
	StatsFormat stats.Format
	// Stderr receives the stats tables (Locust prints them on stderr). If
	// nil, they are discarded.
	Stderr io.Writer
	// Logger receives log lines in Locust's wording, with the logger name
	// in the "logger" attribute (see internal/locustlog). If nil, logs are
	// discarded.
	Logger *slog.Logger
	// Now is the clock for statistics and spawn timestamps. If nil,
	// time.Now.
	Now func() time.Time

	// HeartbeatInterval is the liveness tick (Locust's HEARTBEAT_INTERVAL).
	// If zero, DefaultHeartbeatInterval. Tests shorten it.
	HeartbeatInterval time.Duration
	// HeartbeatLiveness is the tick count a heartbeat buys; a worker is
	// missing once it is used up. If zero, DefaultHeartbeatLiveness.
	HeartbeatLiveness int
	// DeadTicks is how many further ticks a missing worker is kept before
	// it is deleted (Locust's −HEARTBEAT_DEAD_INTERNAL). If zero,
	// DefaultDeadTicks.
	DeadTicks int
	// HeartbeatEchoInterval is the least time between two heartbeats the
	// master echoes to one worker. If zero, DefaultHeartbeatEchoInterval.
	HeartbeatEchoInterval time.Duration
	// ReportWait is how long, after the last step of a ramp, the master
	// waits for workers to report the target user count. If zero,
	// DefaultReportWait.
	ReportWait time.Duration
	// StopWait bounds how long Stop waits for workers to report zero users,
	// on top of StopTimeout. If zero, DefaultStopWait.
	StopWait time.Duration
	// FinalReportTimeout bounds the wait, at exit, for every live worker's
	// final stats report. If zero, max(StopTimeout, 5 s) + 5 s.
	FinalReportTimeout time.Duration
	// FinalReportGrace: see DefaultFinalReportGrace. If zero,
	// DefaultFinalReportGrace + StopTimeout.
	FinalReportGrace time.Duration
	// StatsInterval is the period of the console table. If zero,
	// DefaultStatsInterval.
	StatsInterval time.Duration
	// CSVInterval is the period of CSV writes. If zero, DefaultCSVInterval.
	CSVInterval time.Duration
	// WaitLogInterval is the period of the "Waiting for workers" log line
	// and of the check behind it. If zero, DefaultWaitLogInterval.
	WaitLogInterval time.Duration
	// ShapeTick is how often the load shape is evaluated. If zero,
	// DefaultShapeTick.
	ShapeTick time.Duration

	// Transport configures the ZeroMQ ROUTER. Its Logger defaults to Logger.
	Transport zmtp.Options
	// Thresholds are evaluated on the merged statistics every
	// ThresholdInterval while a test runs (windows, abort_on_fail) and at
	// the end (Result.Thresholds): see package thresholds and
	// thresholds.go. A threshold that fails with abort_on_fail ends a
	// headless run (Quit) and stops any other test.
	Thresholds []thresholds.Threshold
	// DroppedIterations, if set, counts the arrival-rate iterations dropped
	// so far (dropped thresholds are refused without it).
	DroppedIterations func(*stats.Snapshot) int64
	// ThresholdInterval is the period of the live evaluation. If zero,
	// DefaultThresholdInterval.
	ThresholdInterval time.Duration

	// ScenarioFile is the scenario file served to workers started with
	// `-f -` (Locust's locustfile message, ≥ 2.23): read at each request,
	// so a changed file reaches the workers that join later. Empty: such
	// workers get an error reply naming the fix.
	ScenarioFile string
}

func (o *Options) normalize() error {
	if o.BindHost == "" {
		o.BindHost = DefaultBindHost
	}
	if o.BindPort == 0 {
		o.BindPort = DefaultBindPort
	}
	if o.ExpectWorkers <= 0 {
		o.ExpectWorkers = 1
	}
	if o.Users == 0 {
		o.Users = 1
	}
	if err := dispatch.CheckUsers(int64(o.Users)); err != nil {
		return fmt.Errorf("%w: users: %w", ErrOptions, err)
	}
	if o.SpawnRate == 0 {
		o.SpawnRate = 1
	}
	if err := dispatch.CheckRate(o.SpawnRate); err != nil {
		return fmt.Errorf("%w: spawn rate: %w", ErrOptions, err)
	}
	if err := checkRate(o); err != nil {
		return err
	}
	if o.DroppedIterations == nil && len(o.Rate) > 0 {
		o.DroppedIterations = snapshotDropped // rate.go: dropped thresholds need a rate test
	}
	if len(o.Stages) > 0 && o.RunTime > 0 {
		return fmt.Errorf("%w: a run time cannot be combined with a load shape (stages:); to end the test earlier, end the last stage at that time instead of using -t/--run-time", ErrOptions)
	}
	var prev time.Duration
	for i, s := range o.Stages {
		if s.Duration <= prev || s.Users < 0 || s.SpawnRate < 0 {
			return fmt.Errorf("%w: stage %d %+v (durations are cumulative and increasing)", ErrOptions, i, s)
		}
		prev = s.Duration
		if s.SpawnRate == 0 {
			o.Stages[i].SpawnRate = 1
		}
		if err := dispatch.CheckUsers(int64(s.Users)); err != nil {
			return fmt.Errorf("%w: stage %d: users: %w", ErrOptions, i, err)
		}
		if err := dispatch.CheckRate(o.Stages[i].SpawnRate); err != nil {
			return fmt.Errorf("%w: stage %d: spawn rate: %w", ErrOptions, i, err)
		}
	}
	if err := CheckHost(o.Host); err != nil {
		return fmt.Errorf("%w: %w", ErrOptions, err)
	}
	if len(o.UserClasses) > 0 {
		if _, err := dispatch.New(nil, o.UserClasses); err != nil {
			return fmt.Errorf("%w: %w", ErrOptions, err)
		}
	}
	if o.ExitCodeOnError == nil {
		c := DefaultExitCodeOnError
		o.ExitCodeOnError = &c
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	setDefault(&o.HeartbeatInterval, DefaultHeartbeatInterval)
	setDefault(&o.StopQuitGrace, DefaultStopQuitGrace)
	if o.HeartbeatLiveness <= 0 {
		o.HeartbeatLiveness = DefaultHeartbeatLiveness
	}
	if o.DeadTicks <= 0 {
		o.DeadTicks = DefaultDeadTicks
	}
	setDefault(&o.HeartbeatEchoInterval, DefaultHeartbeatEchoInterval)
	setDefault(&o.ReportWait, DefaultReportWait)
	setDefault(&o.StopWait, DefaultStopWait)
	setDefault(&o.FinalReportTimeout, max(o.StopTimeout, 5*time.Second)+5*time.Second)
	setDefault(&o.FinalReportGrace, DefaultFinalReportGrace+o.StopTimeout)
	setDefault(&o.StatsInterval, DefaultStatsInterval)
	setDefault(&o.CSVInterval, DefaultCSVInterval)
	setDefault(&o.SecondRoundTimeout, DefaultSecondRoundTimeout)
	setDefault(&o.WaitLogInterval, DefaultWaitLogInterval)
	setDefault(&o.ShapeTick, DefaultShapeTick)
	setDefault(&o.ThresholdInterval, DefaultThresholdInterval)
	if o.Transport.Logger == nil {
		o.Transport.Logger = o.Logger.With("logger", "cicada.zmtp")
		if o.Standalone { // the process's own connections: their problems only
			o.Transport.Logger = slog.New(minLevel{o.Transport.Logger.Handler(), slog.LevelWarn})
		}
	}
	return nil
}

// minLevel is h without the records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// endpoint is the ZeroMQ endpoint for the bind options.
func (o *Options) endpoint() string {
	port := o.BindPort
	if port < 0 {
		port = 0
	}
	host := o.BindHost
	if len(host) > 0 && host[0] != '[' && containsColon(host) {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("tcp://%s:%d", host, port)
}

func containsColon(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return true
		}
	}
	return false
}
