// Package protocol holds Locust's distributed wire format: the msgpack
// envelope [type, data, node_id] and a typed Go value for every message of
// Locust 2.12.1 and current upstream (see FORMAT.md). The ZMTP transport
// lives in the sub-package zmtp.
//
// The package imports only the standard library and the msgpack codec.
package protocol

// Message type names, exactly as Locust puts them on the wire.
const (
	TypeClientReady      = "client_ready"
	TypeAck              = "ack"
	TypeHeartbeat        = "heartbeat"
	TypeSpawn            = "spawn"
	TypeSpawning         = "spawning"
	TypeSpawningComplete = "spawning_complete"
	TypeStats            = "stats"
	TypeException        = "exception"
	TypeStop             = "stop"
	TypeClientStopped    = "client_stopped"
	TypeQuit             = "quit"
	TypeReconnect        = "reconnect"
	TypeLogs             = "logs"
	TypeLocustfile       = "locustfile"
	TypeUpdateUserClass  = "update_user_class"
)

// Message is one decoded Locust message. Data holds a pointer to the typed
// value for the message (for example *Heartbeat), nil for messages whose data
// is nil on the wire (stop, quit, spawning, ...), or *Custom for types this
// package does not know.
type Message struct {
	Type   string
	Data   any
	NodeID string
}

// ClientReady is the worker's registration. Version is the Locust version
// string of a Python worker, or "" when the worker sent the int -1
// (VersionSkipCheck true), as boomer and cicada do.
type ClientReady struct {
	Version          string
	VersionSkipCheck bool
}

// Ack answers client_ready. Index is -1 when the master sent no index
// (masters before 2.11).
type Ack struct {
	Index int64
}

// Heartbeat is the worker's once-a-second liveness report (W→M).
// MemoryUsage is -1 when the worker omitted it.
type Heartbeat struct {
	State       string
	CPUUsage    float64
	MemoryUsage int64
}

// MasterHeartbeat is the master's echo of a heartbeat (M→W, Locust ≥ 2.19):
// a heartbeat whose data is nil.
type MasterHeartbeat struct{}

// Spawn tells a worker the absolute number of users per class it must run.
// Host is nil when the master has no host. StopTimeout is nil when the
// master sent nil. ParsedOptions is the master's option map, passed through.
type Spawn struct {
	Timestamp        float64
	UserClassesCount map[string]int64
	Host             *string
	StopTimeout      *float64
	ParsedOptions    map[string]any
}

// SpawningComplete is the worker's report after a spawn (W→M).
// UserCount is -1 when the worker omitted it.
type SpawningComplete struct {
	UserClassesCount map[string]int64
	UserCount        int64
}

// MasterSpawningComplete is the master's broadcast at the end of a ramp
// (M→W, Locust ≥ 2.29): a spawning_complete holding only user_count.
type MasterSpawningComplete struct {
	UserCount int64
}

// Exception reports an exception raised by user code (W→M).
type Exception struct {
	Msg       string
	Traceback string
}

// Logs is a HEAD worker's cumulative log report (W→M).
type Logs struct {
	WorkerID string
	Logs     []string
}

// Locustfile is the HEAD locustfile download exchange; Data keeps the map as
// it came (W→M {"version"}, M→W {"locustfiles"} or {"error"}).
type Locustfile struct {
	Data map[string]any
}

// UpdateUserClass carries a HEAD web UI edit of a user class (M→W).
type UpdateUserClass struct {
	Data map[string]any
}

// Custom is the data of a message type this package does not know, decoded
// to plain Go values (see FORMAT.md for the value mapping).
type Custom struct {
	Data any
}

// StatsReport is the data of a worker's stats message (W→M), a delta since
// the worker's previous report (locust-protocol.md §6).
type StatsReport struct {
	Stats            []StatsEntry
	Total            StatsEntry // "stats_total", always present
	Errors           map[string]StatsError
	UserClassesCount map[string]int64
	UserCount        int64
}

// StatsEntry is one (name, method) entry of a stats report, or the
// Aggregated total. Pointer fields are nil where Locust sends nil.
//
// Exact is cicada's extension, sent under the key "cicada_latency" that
// Python masters ignore: the exact latency histogram of the same samples in
// the encoding of package stats. It is nil for Python workers.
type StatsEntry struct {
	Name                 string
	Method               *string
	LastRequestTimestamp *float64
	StartTime            float64
	NumRequests          int64
	NumNoneRequests      int64
	NumFailures          int64
	TotalResponseTime    float64
	MaxResponseTime      float64
	MinResponseTime      *float64
	TotalContentLength   int64
	ResponseTimes        map[int64]int64
	NumReqsPerSec        map[int64]int64
	NumFailPerSec        map[int64]int64
	Exact                []byte
}

// StatsError is one row of a report's errors map. FirstSeen and LastSeen are
// sent by Locust ≥ 2.44 only.
type StatsError struct {
	Name        string
	Method      string
	Error       string
	Occurrences int64
	FirstSeen   *float64
	LastSeen    *float64
}
