package worker

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol/zmtp"
)

// Defaults for the zero values of Options. The intervals are Locust's
// (locust/runners.py at 2.12.1).
const (
	DefaultMasterHost             = "127.0.0.1"
	DefaultMasterPort             = 5557
	DefaultHeartbeatInterval      = time.Second          // HEARTBEAT_INTERVAL
	DefaultStatsInterval          = 3 * time.Second      // WORKER_REPORT_INTERVAL
	DefaultConnectInterval        = 5 * time.Second      // CONNECT_TIMEOUT
	DefaultConnectTimeout         = 61 * 5 * time.Second // CONNECT_RETRY_COUNT+1 tries
	DefaultMasterHeartbeatTimeout = 60 * time.Second     // MASTER_HEARTBEAT_TIMEOUT
	DefaultQuitTimeout            = 250 * time.Millisecond
	DefaultForceWait              = 2 * time.Second
	DefaultExceptionRate          = 100
	DefaultRepeatInterval         = 10 * time.Second
	DefaultMaxUsers               = 1_000_000 // if the open-files limit is unknown
)

// Options configure a Worker. The zero value works: it connects to a
// master on 127.0.0.1:5557 with Locust's timings.
type Options struct {
	// MasterHost is the master's host name or IP address. If empty,
	// DefaultMasterHost.
	MasterHost string
	// MasterPort is the master's port. If zero, DefaultMasterPort.
	MasterPort int
	// NodeID is the worker's id, used as the ZeroMQ identity and in every
	// message. If empty, NewNodeID() is used: "<hostname>_<32 hex digits>".
	NodeID string
	// Logger receives the worker's logs. If nil, logs are discarded.
	Logger *slog.Logger

	// HeartbeatInterval is the period of heartbeat messages. If zero,
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// StatsInterval is the period of stats reports. If zero,
	// DefaultStatsInterval.
	StatsInterval time.Duration
	// ConnectInterval is how long the worker waits for an ack before it
	// sends client_ready again. If zero, DefaultConnectInterval.
	ConnectInterval time.Duration
	// ConnectTimeout is how long Run waits for the first ack before it
	// gives up with ErrNoAck. If zero, DefaultConnectTimeout (Locust's 61
	// tries of 5 s); if negative, forever.
	ConnectTimeout time.Duration
	// MasterHeartbeatTimeout: once the master has sent one heartbeat
	// (Locust ≥ 2.19 masters do), the worker quits if none arrives for this
	// long, and Run returns ErrMasterTimeout. If zero,
	// DefaultMasterHeartbeatTimeout; if negative, never.
	MasterHeartbeatTimeout time.Duration

	// StopTimeout is the graceful stop time used while the master has not
	// sent one (its spawn's stop_timeout is nil). Zero means users are
	// stopped at once, as in Locust.
	StopTimeout time.Duration
	// QuitTimeout is how long in-flight tasks may run after a quit before
	// they are interrupted; the final stats report follows. Keep it below
	// the half second a Python master waits for final reports. If zero,
	// DefaultQuitTimeout.
	QuitTimeout time.Duration
	// ForceWait is how long the worker waits for interrupted tasks to
	// return after a forced stop. If zero, DefaultForceWait.
	ForceWait time.Duration
	// ExceptionRate caps the exception messages sent per second; the rest
	// are counted and logged. If zero, DefaultExceptionRate.
	ExceptionRate int
	// RepeatInterval is the shortest interval between two log lines (and
	// exception messages to the master) of one cause the master's messages
	// can make the worker repeat: unknown user classes, unusable spawns,
	// malformed or unknown messages. Repeats are counted, and the count is
	// logged with the next line or in a summary line. If zero,
	// DefaultRepeatInterval; if negative, nothing is suppressed.
	RepeatInterval time.Duration

	// MaxUsers is the most users a spawn may ask of this worker. A spawn
	// asking for more runs MaxUsers users (each class its share), with an
	// ERROR and an exception to the master (ErrTooManyUsers), and
	// spawning_complete reports the users that run. If zero, twice the
	// process's open-files limit (RLIMIT_NOFILE, read by New): each HTTP
	// user holds one connection, so beyond the limit users fail to connect
	// (EMFILE, diagnosed), and far beyond it the worker would only grow;
	// the port range × SourceIPs is per destination and only warned about.
	// DefaultMaxUsers if the limit is unknown or unlimited. Set it for users
	// that hold no connection. If negative, there is no ceiling, and memory
	// is the limit.
	MaxUsers int64

	// Tags and ExcludeTags are the worker's own -T/--tags and
	// -E/--exclude-tags: the task selection when the master's spawn
	// message does not carry its own (see FilterTasks; a Python master
	// always sends its own, null included, which wins as in Locust).
	Tags, ExcludeTags []string

	// SourceIPs, if set, are the local addresses the users' connections are
	// bound to, in turn (user i gets SourceIPs[i % len]): each address
	// gives a full ephemeral port range per destination, so a worker can
	// hold more than ~64k connections to one server address. New checks
	// that the host owns them (diag.CheckSourceIPs).
	SourceIPs []netip.Addr
	// SecondRoundTimeout bounds a second round (the master's
	// cicada_second_round). If zero, DefaultSecondRoundTimeout.
	SecondRoundTimeout time.Duration
	// DisableDiagnosis turns the self-diagnosis off (the limit checks at
	// start and at each spawn that asks for more users).
	DisableDiagnosis bool

	// Runtime, if set, runs the users instead of the worker's goroutine
	// pool (see Runtime): the data plane's runtime, package
	// dataplane/users. Every class then runs on it; the worker keeps the
	// protocol and the stats. SourceIPs and the HTTP options are the
	// runtime's business then (it refuses what it cannot honour), the
	// self-diagnosis of kernel socket limits is off, and MaxUsers should
	// be the runtime's ceiling (users.Runtime.MaxUsers).
	Runtime Runtime

	// Transport configures the ZeroMQ DEALER. Its Logger defaults to
	// Logger.
	Transport zmtp.Options
	// Now is the clock for stats. If nil, time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MasterHost == "" {
		o.MasterHost = DefaultMasterHost
	}
	if o.MasterPort == 0 {
		o.MasterPort = DefaultMasterPort
	}
	if o.NodeID == "" {
		o.NodeID = NewNodeID()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.StatsInterval <= 0 {
		o.StatsInterval = DefaultStatsInterval
	}
	if o.ConnectInterval <= 0 {
		o.ConnectInterval = DefaultConnectInterval
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MasterHeartbeatTimeout == 0 {
		o.MasterHeartbeatTimeout = DefaultMasterHeartbeatTimeout
	}
	if o.StopTimeout < 0 {
		o.StopTimeout = 0
	}
	if o.QuitTimeout <= 0 {
		o.QuitTimeout = DefaultQuitTimeout
	}
	if o.ForceWait <= 0 {
		o.ForceWait = DefaultForceWait
	}
	if o.ExceptionRate <= 0 {
		o.ExceptionRate = DefaultExceptionRate
	}
	if o.RepeatInterval == 0 {
		o.RepeatInterval = DefaultRepeatInterval
	}
	if o.SecondRoundTimeout <= 0 {
		o.SecondRoundTimeout = DefaultSecondRoundTimeout
	}
	if o.Transport.Logger == nil {
		o.Transport.Logger = o.Logger
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// NewNodeID returns a Locust-style worker id: the host name, an underscore
// and 32 random hex digits. Underscores in the host name are replaced by
// dashes, because Locust's dispatcher takes the id up to the first
// underscore as the host.
func NewNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "cicada"
	}
	host = strings.ReplaceAll(host, "_", "-")
	var b [16]byte
	_, _ = rand.Read(b[:])
	return host + "_" + hex.EncodeToString(b[:])
}
