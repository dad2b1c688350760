package stack

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/cicada-load/cicada/dataplane/link"
)

// ErrConfig is wrapped by every refused Config.
var ErrConfig = errors.New("stack: invalid configuration")

// Mode selects the side of the tuple space a Stack plays.
type Mode uint8

// Modes.
const (
	// Client opens connections from the client range to the server.
	Client Mode = iota + 1
	// Server accepts connections from the client range and serves a fixed
	// page and /bytes/<n> objects.
	Server
)

// Defaults for zero Config fields.
const (
	DefaultServerPort        = 80
	DefaultPortMin           = 10000
	DefaultPortMax           = 59999
	DefaultWindow            = 65535
	DefaultSendWindow        = 64 << 10
	DefaultRetransmitTimeout = 200 * time.Millisecond
	DefaultMaxRetries        = 3
	// DefaultMaxRetransmitTimeout caps the doubling retransmission
	// timeout.
	DefaultMaxRetransmitTimeout = 60 * time.Second
	DefaultIdleTimeout          = 60 * time.Second
	DefaultARPInterval          = time.Second
	DefaultBodySize             = 128
	DefaultBurst                = 64
	// DefaultSecondRoundWindow bounds the second round's requests in
	// flight: well under the lab's receive rings, so that the responses
	// of one window fit in them.
	DefaultSecondRoundWindow = 4096
	// MaxConns bounds the connection table (client IPs x client ports).
	MaxConns = 1 << 28
	// MaxTimeout bounds every timeout and wait, so that now plus any of
	// them stays far inside int64 nanoseconds.
	MaxTimeout = 365 * 24 * time.Hour
	// MaxBodySize bounds the server's page.
	MaxBodySize = 64 << 20
)

// Config configures a Stack. Both sides are given the same tuple space, as
// in dperf: ClientIPs addresses from ClientIP, ports PortMin..PortMax, one
// server address and port. Fields marked client or server are refused on the
// other side rather than ignored.
type Config struct {
	// Mode is Client or Server; required.
	Mode Mode
	// Link carries the frames; required. The Stack is its only user.
	Link link.Link
	// ClientIP is the first client address; required.
	ClientIP uint32
	// ClientIPs is the number of client addresses. If zero, 1.
	ClientIPs int
	// PortMin and PortMax bound the client ports. If both are zero,
	// DefaultPortMin..DefaultPortMax.
	PortMin, PortMax uint16
	// ServerIP is the server address; required, outside the client range.
	ServerIP uint32
	// ServerPort is the server port. If zero, DefaultServerPort.
	ServerPort uint16
	// Gateway is the next hop resolved by ARP. If zero, the client resolves
	// ServerIP and the server learns the source MAC of the first frame
	// from the client range.
	Gateway uint32
	// MSS is the advertised and largest sent segment size. If zero, the
	// link's MTU minus 40.
	MSS uint16
	// WScale is the advertised window scale shift (0..14); applied only
	// when the peer's SYN carries the option too.
	WScale uint8
	// Window is the fixed receive window in bytes. If zero, DefaultWindow.
	Window uint32
	// SendWindow bounds unacknowledged bytes per connection (server),
	// above the peer's window and the congestion window. If zero,
	// DefaultSendWindow.
	SendWindow uint32
	// RetransmitTimeout is the first retransmission timeout. If zero,
	// DefaultRetransmitTimeout.
	RetransmitTimeout time.Duration
	// MaxRetransmitTimeout caps the retransmission timeout, which doubles
	// per retry from RetransmitTimeout. If zero,
	// DefaultMaxRetransmitTimeout; refused below RetransmitTimeout.
	MaxRetransmitTimeout time.Duration
	// MaxRetries is how many retransmissions a segment gets before the
	// connection is reset and counted failed (1..255). If zero,
	// DefaultMaxRetries.
	MaxRetries int
	// IdleTimeout bounds the wait for a response (client) and an idle
	// keep-alive connection (server). If zero, DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ARPInterval spaces ARP requests for an unresolved next hop. If zero,
	// DefaultARPInterval.
	ARPInterval time.Duration
	// Burst is the receive and transmit burst size (1..1024). If zero,
	// DefaultBurst.
	Burst int

	// Request is the client's raw HTTP/1.1 request, sent as one segment
	// (at most MSS bytes). If nil, BuildRequest("GET", "/", server).
	Request []byte
	// RequestsPerConn is how many requests a client connection makes
	// (1..65535). If zero, 1.
	RequestsPerConn int
	// ThinkTime is the client's wait between requests on one connection.
	ThinkTime time.Duration
	// Hold keeps a client connection open after its last response instead
	// of closing it.
	Hold bool
	// Program, if set, makes the client's connections Locust users (see
	// Program, LaunchClass, StopClass, TakeStats). Refused together with
	// Request, RequestsPerConn, ThinkTime or Hold.
	Program *Program
	// SecondRoundWindow bounds the requests of SecondRound in flight at a
	// time (client with a Program); the stack sends the rest of the
	// round's requests as responses come back. If zero,
	// DefaultSecondRoundWindow.
	SecondRoundWindow int
	// OnResponse, if set, is called in the polling goroutine for every
	// complete client response with its status and response time.
	OnResponse func(status int, rt time.Duration)

	// BodySize is the server page's body size. If zero, DefaultBodySize.
	BodySize int
	// Chunked makes the server send its page with Transfer-Encoding:
	// chunked (chunks of ChunkSize bytes) instead of Content-Length.
	Chunked bool
}

// ChunkSize is the chunk size of a Chunked server page.
const ChunkSize = 1000

func (c *Config) setDefaults() {
	if c.ClientIPs == 0 {
		c.ClientIPs = 1
	}
	if c.PortMin == 0 && c.PortMax == 0 {
		c.PortMin, c.PortMax = DefaultPortMin, DefaultPortMax
	}
	if c.ServerPort == 0 {
		c.ServerPort = DefaultServerPort
	}
	if c.MSS == 0 && c.Link != nil && c.Link.MTU() > 40 && c.Link.MTU()-40 <= math.MaxUint16 {
		c.MSS = uint16(c.Link.MTU() - 40)
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.SendWindow == 0 {
		c.SendWindow = DefaultSendWindow
	}
	if c.RetransmitTimeout == 0 {
		c.RetransmitTimeout = DefaultRetransmitTimeout
	}
	if c.MaxRetransmitTimeout == 0 {
		c.MaxRetransmitTimeout = max(DefaultMaxRetransmitTimeout, c.RetransmitTimeout)
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ARPInterval == 0 {
		c.ARPInterval = DefaultARPInterval
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Mode == Client {
		if c.RequestsPerConn == 0 && c.Program == nil {
			c.RequestsPerConn = 1
		}
		if c.Request == nil && c.Program == nil {
			c.Request = BuildRequest("GET", "/", ipString(c.ServerIP), nil)
		}
		if c.SecondRoundWindow == 0 && c.Program != nil {
			c.SecondRoundWindow = DefaultSecondRoundWindow
		}
	}
	if c.Mode == Server && c.BodySize == 0 {
		c.BodySize = DefaultBodySize
	}
}

func (c *Config) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("stack: "+format+": %w", append(a, ErrConfig)...)
	}
	switch {
	case c.Mode != Client && c.Mode != Server:
		return bad("Mode %d is neither Client nor Server", c.Mode)
	case c.Link == nil:
		return bad("no Link")
	case c.Link.MTU() < 128 || c.Link.FrameSize() < c.Link.MTU()+14:
		return bad("link MTU %d (frame %d) too small", c.Link.MTU(), c.Link.FrameSize())
	case c.ClientIP == 0:
		return bad("no ClientIP")
	case c.ClientIPs < 1 || uint64(c.ClientIP)+uint64(c.ClientIPs) > 1<<32:
		return bad("ClientIPs %d from %s leaves the address space", c.ClientIPs, ipString(c.ClientIP))
	case c.PortMin == 0 || c.PortMin > c.PortMax:
		return bad("client ports %d..%d", c.PortMin, c.PortMax)
	case uint64(c.ClientIPs)*uint64(c.PortMax-c.PortMin+1) > MaxConns:
		return bad("%d client IPs x %d ports exceeds %d connections", c.ClientIPs, c.PortMax-c.PortMin+1, MaxConns)
	case uint64(c.ClientIPs)*uint64(c.PortMax-c.PortMin+1)*uint64(unsafe.Sizeof(conn{})) > math.MaxInt:
		return bad("%d client IPs x %d ports do not fit this platform's address space", c.ClientIPs, c.PortMax-c.PortMin+1)
	case c.ServerIP == 0:
		return bad("no ServerIP")
	case c.ServerIP-c.ClientIP < uint32(c.ClientIPs):
		return bad("ServerIP %s inside the client range", ipString(c.ServerIP))
	case c.Gateway != 0 && c.Gateway-c.ClientIP < uint32(c.ClientIPs):
		return bad("Gateway %s inside the client range", ipString(c.Gateway))
	case c.MSS < 88 || int(c.MSS) > c.Link.MTU()-40:
		return bad("MSS %d outside 88..%d (MTU-40)", c.MSS, c.Link.MTU()-40)
	case c.WScale > 14:
		return bad("WScale %d above 14", c.WScale)
	case c.Window < uint32(c.MSS) || uint64(c.Window) > uint64(0xffff)<<c.WScale:
		return bad("Window %d outside MSS..%d", c.Window, uint64(0xffff)<<c.WScale)
	case c.SendWindow < uint32(c.MSS):
		return bad("SendWindow %d below MSS %d", c.SendWindow, c.MSS)
	case c.RetransmitTimeout < 0 || c.IdleTimeout < 0 || c.ARPInterval < 0 || c.ThinkTime < 0:
		return bad("negative timeout")
	case c.RetransmitTimeout > MaxTimeout || c.MaxRetransmitTimeout > MaxTimeout || c.IdleTimeout > MaxTimeout ||
		c.ARPInterval > MaxTimeout || c.ThinkTime > MaxTimeout:
		return bad("a timeout above MaxTimeout (%v)", MaxTimeout)
	case c.MaxRetransmitTimeout < c.RetransmitTimeout:
		return bad("MaxRetransmitTimeout %v below RetransmitTimeout %v", c.MaxRetransmitTimeout, c.RetransmitTimeout)
	case c.MaxRetries < 1 || c.MaxRetries > 255:
		return bad("MaxRetries %d outside 1..255", c.MaxRetries)
	case c.Burst < 1 || c.Burst > 1024:
		return bad("Burst %d outside 1..1024", c.Burst)
	case c.SecondRoundWindow < 0 || c.SecondRoundWindow > MaxConns:
		return bad("SecondRoundWindow %d negative or above %d", c.SecondRoundWindow, MaxConns)
	case c.SecondRoundWindow != 0 && (c.Mode != Client || c.Program == nil):
		return bad("SecondRoundWindow set without a client Program (only a Program's users take part in a second round)")
	}
	if c.Mode == Server {
		switch {
		case c.Request != nil || c.RequestsPerConn != 0 || c.ThinkTime != 0 || c.Hold || c.OnResponse != nil || c.Program != nil:
			return bad("client options (Request, RequestsPerConn, ThinkTime, Hold, OnResponse, Program) set in Server mode")
		case c.BodySize < 0 || c.BodySize > MaxBodySize:
			return bad("BodySize %d outside 0..%d", c.BodySize, MaxBodySize)
		}
		return nil
	}
	switch {
	case c.BodySize != 0 || c.Chunked:
		return bad("server options (BodySize, Chunked) set in Client mode")
	case c.Program != nil && (c.Request != nil || c.RequestsPerConn != 0 || c.ThinkTime != 0 || c.Hold):
		return bad("Program set with Request, RequestsPerConn, ThinkTime or Hold")
	case c.Program != nil:
		return nil // compileProgram checks the rest
	case len(c.Request) == 0 || len(c.Request) > int(c.MSS):
		return bad("Request of %d bytes outside 1..MSS (%d)", len(c.Request), c.MSS)
	case c.RequestsPerConn < 1 || c.RequestsPerConn > 65535:
		return bad("RequestsPerConn %d outside 1..65535", c.RequestsPerConn)
	}
	return nil
}

func ipString(ip uint32) string {
	return fmt.Sprintf("%d.%d.%d.%d", ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff)
}
