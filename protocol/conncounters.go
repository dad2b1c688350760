package protocol

// KeyCicadaConnections is the extra heartbeat key under which cicada workers
// send their ConnCounters. Locust's master reads only the heartbeat keys it
// knows (locust/runners.py 2.12.1, MasterRunner.client_listener), so the
// extension is invisible to it.
const KeyCicadaConnections = "cicada_connections"

// Custom message types cicada's master and workers exchange. They are plain
// custom messages (Custom data): a Python master logs them as an unknown
// message type, a Python worker never receives them.
const (
	// TypeCicadaWarning (W→M) carries a worker's self-diagnosis:
	// {"kind": str, "message": str}.
	TypeCicadaWarning = "cicada_warning"
	// TypeCicadaSecondRound (M→W) asks every user to send one more request
	// on its existing connection. Data: nil.
	TypeCicadaSecondRound = "cicada_second_round"
	// TypeCicadaSecondRoundResult (W→M) answers it: {"users", "reused",
	// "reconnected", "failed": int, "errors": {str: int}}.
	TypeCicadaSecondRoundResult = "cicada_second_round_result"
	// TypeCicadaRate (M→W) gives a worker its share of an arrival rate
	// (issue 13): {"rate": float, iterations per second}. A worker that
	// gets it paces its users' iterations (package worker, rate.go).
	TypeCicadaRate = "cicada_rate"
)

// ConnCounters are a worker's client connection counters, cumulative since
// the worker started except the two gauges Open and Established.
//
// Wire form: a map {"open", "established", "connects", "reconnects": int,
// "closes", "connect_errors", "errors": {str: int}}. Unknown keys are
// skipped; missing ones decode as zero (nil maps). Empty maps decode to nil.
type ConnCounters struct {
	// Open is the number of sockets the worker holds: connecting plus
	// established.
	Open int64
	// Established is the number of established connections.
	Established int64
	// Connects counts successful connects.
	Connects int64
	// Reconnects counts the connects that replaced a user's earlier
	// connection (included in Connects).
	Reconnects int64
	// Closes counts closed connections by cause ("server closed idle", ...).
	Closes map[string]int64
	// ConnectErrors counts failed connects by kind ("local ports
	// exhausted", "connection refused", ...).
	ConnectErrors map[string]int64
	// Errors counts failed requests on open connections by kind
	// ("connection reset", "EOF before response", "read timeout", ...).
	Errors map[string]int64
	// TLSHandshakes and TLSResumed count completed full and resumed TLS
	// handshakes, TLSHandshakeMicros their summed time in microseconds.
	// H2GoAways and H2ResetStreams count GOAWAY and RST_STREAM frames
	// received on HTTP/2 connections. Wire keys "tls_handshakes",
	// "tls_resumed", "tls_handshake_us", "h2_goaways", "h2_rst_streams",
	// sent only when one of them is not zero (issue 16).
	TLSHandshakes, TLSResumed, TLSHandshakeMicros int64
	H2GoAways, H2ResetStreams                     int64
}

func (c *ConnCounters) hasTLS() bool {
	return c.TLSHandshakes != 0 || c.TLSResumed != 0 || c.TLSHandshakeMicros != 0 || c.H2GoAways != 0 || c.H2ResetStreams != 0
}

func (e *encoder) connCounters(c *ConnCounters) {
	if c.hasTLS() {
		e.mapLen(12)
	} else {
		e.mapLen(7)
	}
	e.key("open")
	e.int(c.Open)
	e.key("established")
	e.int(c.Established)
	e.key("connects")
	e.int(c.Connects)
	e.key("reconnects")
	e.int(c.Reconnects)
	e.key("closes")
	e.strIntMap(c.Closes)
	e.key("connect_errors")
	e.strIntMap(c.ConnectErrors)
	e.key("errors")
	e.strIntMap(c.Errors)
	if c.hasTLS() {
		e.key("tls_handshakes")
		e.int(c.TLSHandshakes)
		e.key("tls_resumed")
		e.int(c.TLSResumed)
		e.key("tls_handshake_us")
		e.int(c.TLSHandshakeMicros)
		e.key("h2_goaways")
		e.int(c.H2GoAways)
		e.key("h2_rst_streams")
		e.int(c.H2ResetStreams)
	}
}

func (d *decoder) connCounters() (*ConnCounters, error) {
	c := &ConnCounters{}
	// The counters are a map inside the heartbeat's data: level 3.
	err := d.fields(MaxDepth-3, func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "open":
			c.Open, err = d.int64()
		case "established":
			c.Established, err = d.int64()
		case "connects":
			c.Connects, err = d.int64()
		case "reconnects":
			c.Reconnects, err = d.int64()
		case "closes":
			c.Closes, err = d.strIntMap()
		case "connect_errors":
			c.ConnectErrors, err = d.strIntMap()
		case "errors":
			c.Errors, err = d.strIntMap()
		case "tls_handshakes":
			c.TLSHandshakes, err = d.int64()
		case "tls_resumed":
			c.TLSResumed, err = d.int64()
		case "tls_handshake_us":
			c.TLSHandshakeMicros, err = d.int64()
		case "h2_goaways":
			c.H2GoAways, err = d.int64()
		case "h2_rst_streams":
			c.H2ResetStreams, err = d.int64()
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Failure kind labels: the keys of ConnCounters.ConnectErrors and Errors
// and of a second-round result's "errors", as cicada workers send them
// (worker/httpc.Kind.String returns them).
const (
	FailureOther             = "other"
	FailureRefused           = "connection refused"
	FailureReset             = "connection reset"
	FailureEOFBeforeResponse = "EOF before response"
	FailureIncomplete        = "incomplete response"
	FailureConnectTimeout    = "connect timeout"
	FailureReadTimeout       = "read timeout"
	FailureDNS               = "DNS"
	FailureTLS               = "TLS"
	FailureHTTPStatus        = "HTTP status"
	FailureProtocol          = "protocol error"
	FailureUnreachable       = "network unreachable"
	FailurePortsExhausted    = "local ports exhausted"
	FailureFileLimit         = "open-file limit"
	FailureNoBuffers         = "no buffer space"
	FailureBodyTooLarge      = "body too large"
	FailureCanceled          = "canceled"
	FailureInvalidRequest    = "invalid request"
	FailureClientClosed      = "client closed"
	// The TLS handshake failures (issue 16): the certificate did not
	// verify, no common protocol version, the server sent an alert, the
	// handshake timed out. FailureTLS is every other TLS failure.
	FailureTLSCertificate = "TLS certificate"
	FailureTLSVersion     = "TLS version"
	FailureTLSAlert       = "TLS alert"
	FailureTLSTimeout     = "TLS handshake timeout"
)

// failureKinds is the one table of the failure kinds and of which are the
// load generator's own fault (true) rather than the server's or the
// network's. worker/httpc derives Kind.GeneratorSide from it.
var failureKinds = map[string]bool{
	FailureOther:             false,
	FailureRefused:           false,
	FailureReset:             false,
	FailureEOFBeforeResponse: false,
	FailureIncomplete:        false,
	FailureConnectTimeout:    false,
	FailureReadTimeout:       false,
	FailureDNS:               false,
	FailureTLS:               false,
	FailureHTTPStatus:        false,
	FailureProtocol:          false,
	FailureUnreachable:       false,
	FailurePortsExhausted:    true,
	FailureFileLimit:         true,
	FailureNoBuffers:         true,
	FailureBodyTooLarge:      true,
	FailureCanceled:          true,
	FailureInvalidRequest:    true,
	FailureClientClosed:      true,
	FailureTLSCertificate:    false,
	FailureTLSVersion:        false,
	FailureTLSAlert:          false,
	FailureTLSTimeout:        false,
}

// KnownFailureKind reports whether kind is one of the Failure* labels.
func KnownFailureKind(kind string) bool {
	_, ok := failureKinds[kind]
	return ok
}

// GeneratorSideKind reports whether a failure kind label (a key of
// ConnCounters.ConnectErrors or Errors) is the load generator's own fault
// (its ports, file descriptors or memory ran out; a scenario bug) rather
// than the server's or the network's.
func GeneratorSideKind(kind string) bool { return failureKinds[kind] }
