// Package protocol holds Locust's distributed wire format: the msgpack
// envelope [type, data, node_id] and a typed Go value for every message of
// Locust 2.12.1 and current upstream (see FORMAT.md). The ZMTP transport
// lives in the sub-package zmtp.
//
// Decode turns one ZeroMQ frame into a Message; Encode and AppendEncode do
// the reverse. Both are safe for concurrent use, never retain their inputs,
// and are checked against frames captured from real Locust masters and
// workers.
//
// The package imports only the standard library and the msgpack codec.
package protocol

// Message type names, exactly as Locust puts them on the wire (Locust
// 2.12.1 locust/runners.py: MasterRunner.client_listener, WorkerRunner.worker
// and their send_message calls). Messages of the types spawning, stop,
// client_stopped, quit and reconnect carry nil data.
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

// KeyCicadaLatency is the extra StatsEntry key under which cicada workers
// send StatsEntry.Exact as msgpack bin. Python masters ignore unknown entry
// keys, so the extension is invisible to them.
const KeyCicadaLatency = "cicada_latency"

// KeyCicadaPhases is the extra StatsEntry key under which cicada workers
// send StatsEntry.Phases (per-phase timings, package stats) as msgpack
// bin; Python masters ignore it as they do KeyCicadaLatency.
const KeyCicadaPhases = "cicada_phases"

// KeyCicadaDropped is the extra top-level stats message key carrying
// StatsReport.Dropped.
const KeyCicadaDropped = "cicada_dropped"

// CicadaVersion is the version of cicada's extensions to the protocol that a
// cicada master announces in its ack (Ack.Cicada).
const CicadaVersion = "1"

// Message is one decoded Locust message. Data holds a pointer to the typed
// value for the message (for example *Heartbeat), nil for messages whose data
// is nil on the wire (stop, quit, spawning, ...), or *Custom for types this
// package does not know (and for nil-data types that arrive with data).
//
// A decoded Message owns its values: nothing aliases the payload or other
// messages, except that pointer fields of one message may share a backing
// array. A Message is not safe for concurrent mutation.
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
// (masters before 2.11); an Index of -1 encodes as nil data.
type Ack struct {
	Index int64
	// Cicada is set by a cicada master (key "cicada", which Python workers
	// ignore): it tells a cicada worker that cicada's own messages
	// (cicada_warning, ...) are understood, so a Python master's log is
	// never filled with "Unknown message type". Empty from Python masters.
	Cicada string
}

// Heartbeat is the worker's once-a-second liveness report (W→M). State and
// CPUUsage are required on the wire (Locust's master fails without them).
// MemoryUsage is -1 when the worker omitted it (or sent nil); a value of -1
// is omitted on encode.
type Heartbeat struct {
	State       string
	CPUUsage    float64
	MemoryUsage int64
	// Connections are a cicada worker's connection counters, sent under
	// the extra key KeyCicadaConnections; nil when absent. Python masters
	// ignore the key.
	Connections *ConnCounters
}

// MasterHeartbeat is the master's echo of a heartbeat (M→W, Locust ≥ 2.19):
// a heartbeat whose data is nil.
type MasterHeartbeat struct{}

// Spawn tells a worker the absolute number of users per class it must run.
// Host is nil when the master has no host. StopTimeout is nil when the
// master sent nil (an int is read as float). ParsedOptions is the master's
// option map, passed through as plain values (see FORMAT.md). All five keys
// are required on the wire; an empty map decodes to nil and nil maps encode
// as {}.
type Spawn struct {
	Timestamp        float64
	UserClassesCount map[string]int64
	Host             *string
	StopTimeout      *float64
	ParsedOptions    map[string]any
}

// SpawningComplete is the worker's report after a spawn (W→M), recognised
// by its user_classes_count key. UserCount is -1 when the worker omitted it
// (boomer sends "count" instead); a value of -1 is omitted on encode.
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

// Logs is a HEAD worker's cumulative log report (W→M). An empty list
// decodes to nil.
type Logs struct {
	WorkerID string
	Logs     []string
}

// Locustfile is the HEAD locustfile download exchange; Data keeps the map as
// it came, as plain values (W→M {"version"}, M→W {"locustfiles"} or
// {"error"}). Data is nil when the data was nil (2.23–2.30 requests), and
// encodes back to nil.
type Locustfile struct {
	Data map[string]any
}

// UpdateUserClass carries a HEAD web UI edit of a user class (M→W), as plain
// values. An empty map decodes to nil and nil encodes as {}.
type UpdateUserClass struct {
	Data map[string]any
}

// Custom is the data of a message type this package does not know, decoded
// to plain Go values: nil, bool, int64 (uint64 above MaxInt64), float64,
// string, []byte (msgpack bin), []any, map[string]any when every key is a
// string, else map[any]any (int keys stay int64), and time.Time for HEAD's
// {"__datetime__": true, "as_str": ...} map. Encoding writes the same values
// back faithfully; FORMAT.md §5 has the full mapping.
type Custom struct {
	Data any
}

// StatsReport is the data of a worker's stats message (W→M), a delta since
// the worker's previous report (Locust 2.12.1 locust/stats.py,
// setup_distributed_stats_event_listeners; locust/runners.py,
// WorkerRunner.__init__'s on_report_to_master). The keys stats,
// stats_total, errors and user_classes_count are required on the wire;
// UserCount is -1 when user_count was absent; a value of -1 is omitted on
// encode. Empty maps and lists decode to nil; nil encodes as empty.
type StatsReport struct {
	Stats            []StatsEntry
	Total            StatsEntry // "stats_total", always present
	Errors           map[string]StatsError
	UserClassesCount map[string]int64
	UserCount        int64
	// Dropped is cicada's extension, sent under the top-level key
	// KeyCicadaDropped when not zero: the arrival-rate iterations this
	// worker could not start in the report window because every user was
	// busy (issue 13). Python masters ignore unknown top-level keys of a
	// stats message (they read stats, stats_total, errors and the counts).
	Dropped int64
	// DroppedBy attributes Dropped to request names (KeyCicadaDroppedBy,
	// droppedby.go): the counts sum to Dropped when the worker attributes
	// every drop (cicada workers do); empty when nothing was dropped.
	DroppedBy []DroppedName

	mem *statsMem // the pooled memory of a DecodePooled report, else nil
}

// StatsEntry is one (name, method) entry of a stats report, or the
// Aggregated total. Pointer fields are nil where Locust sends nil. Name,
// method and start_time are required on the wire; other missing keys keep
// their zero value, as in Locust's master. Bucket and per-second keys may
// arrive as any integer width or as floats (2.12.1 sends 140.0), which are
// truncated to int64; they are always encoded as msgpack integers, in
// ascending order, because Locust sorts them.
//
// The three stats maps (response_times, num_reqs_per_sec, num_fail_per_sec)
// are held as key/count pairs, the msgpack map's entries in one slice:
// Decode and DecodePooled give them in strictly ascending key order (of
// repeated keys the last one wins, as in a Python dict; nil for an empty
// map), so that a master decodes and merges reports without map operations
// and Encode writes them in Locust's sorted order as they are. Pairs built
// by hand may come in any order: Encode and package stats take them as the
// map holding them (see CountMap), and Counts builds pairs from a map.
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
	ResponseTimes        []Count // response_times: bucket (ms) → requests
	NumReqsPerSec        []Count // num_reqs_per_sec: unix second → requests
	NumFailPerSec        []Count // num_fail_per_sec: unix second → failures
	Exact                []byte
	// Phases is cicada's per-phase timings of the same requests (key
	// KeyCicadaPhases, encoding of package stats), nil if none.
	Phases []byte
}

// StatsError is one row of a report's errors map. FirstSeen and LastSeen are
// sent by Locust ≥ 2.44 only; nil ones are omitted on encode. A nil name,
// method or error on the wire decodes as "".
type StatsError struct {
	Name        string
	Method      string
	Error       string
	Occurrences int64
	FirstSeen   *float64
	LastSeen    *float64
}
