package users

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/stack"
)

// Link kinds of Options.Link.
const (
	LinkAFPacket = "afpacket"
	LinkAFXDP    = "afxdp"
	// LinkDPDK is a DPDK port (Options.DPDK), in a binary built with the
	// dpdk tag (make build-dpdk); refused with dpdk.ErrUnsupported in
	// others.
	LinkDPDK = "dpdk"
)

// Defaults for zero Options fields.
const (
	// DefaultConnectRate is the default of Options.ConnectRate: new users
	// (SYNs) per second and core while a spawn ramps up. A spawn of
	// 100,000 users on one core takes 10 s.
	DefaultConnectRate = 10_000
	// DefaultDetailInterval is how often the dperf-style counters are
	// logged.
	DefaultDetailInterval = 5 * time.Second
	// DefaultPoll is how often Spawn, Stop and SecondRound look at the
	// cores' progress.
	DefaultPoll = 10 * time.Millisecond
	// SpawnStall is how long Spawn waits without a single new user before
	// it gives up with an error (the cores keep trying): an unresolved
	// next hop, or a table whose records are all taken.
	SpawnStall = 10 * time.Second
)

// Sentinel errors.
var (
	// ErrOption is wrapped by New for Options that cannot be honoured.
	ErrOption = errors.New("users: invalid option")
	// ErrRefused is wrapped by New (and Spawn, for a master's host) for a
	// scenario the data plane cannot run as written; the message names the
	// class, task, request and field.
	ErrRefused = errors.New("users: the data plane cannot run this")
)

// Options configure a Runtime.
type Options struct {
	// Link is LinkAFPacket or LinkAFXDP: the links New opens on Interface.
	// Empty when Links is set.
	Link string
	// Interface is the network interface the links open (Link); not
	// used by LinkDPDK, whose port is DPDK.Port.
	Interface string
	// DPDK configures the LinkDPDK link: EAL arguments, port, rings.
	DPDK dpdk.Config
	// Links, if set, replaces Link and Interface: it returns one link per
	// core and, for links that can block, their Waiters (nil entries or a
	// nil slice for none). Tests pass pipe links. Links implementing
	// io.Closer are closed by Close.
	Links func(cores int) ([]link.Link, []engine.Waiter, error)

	// ClientIP is the first client address; required. ClientIPs is the
	// number of client addresses (if zero, 1).
	ClientIP  netip.Addr
	ClientIPs int
	// PortMin and PortMax bound the client ports (both zero:
	// stack.DefaultPortMin..DefaultPortMax). The cores split them
	// (engine.Split).
	PortMin, PortMax uint16
	// Gateway is the next hop; if not set, the server is on the link.
	Gateway netip.Addr
	// Cores is the number of engine cores, one stack and link each. If
	// zero, 1.
	Cores int
	// MaxUsers is the most users the runtime holds: one connection record
	// each, at most ClientIPs × ports (refused above). If zero, the tuple
	// space. Give the worker the same ceiling (Runtime.MaxUsers).
	MaxUsers int64
	// ConnectRate is how many new users per second and core a spawn
	// launches (SYNs). If zero, DefaultConnectRate.
	ConnectRate float64
	// LockThreads locks each core's loop to an OS thread (engine). New
	// sets it for Link; tests over pipes leave it off.
	LockThreads bool
	// DetailInterval is how often the dperf-style counters (packets,
	// retransmissions, drops, busy share per core) are logged at info. If
	// zero, DefaultDetailInterval; negative: never.
	DetailInterval time.Duration
	// Logger receives the runtime's logs; the worker's logger if nil (at
	// Start), discarded before.
	Logger *slog.Logger

	workerLogger bool // Logger was nil: Start takes the worker's
}

func (o *Options) normalize() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("users: "+format+": %w", append(args, ErrOption)...)
	}
	if o.ClientIPs == 0 {
		o.ClientIPs = 1
	}
	if o.PortMin == 0 && o.PortMax == 0 {
		o.PortMin, o.PortMax = stack.DefaultPortMin, stack.DefaultPortMax
	}
	if o.Cores == 0 {
		o.Cores = 1
	}
	if o.ConnectRate == 0 {
		o.ConnectRate = DefaultConnectRate
	}
	if o.DetailInterval == 0 {
		o.DetailInterval = DefaultDetailInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		o.workerLogger = true
	}
	switch {
	case o.Links == nil && o.Link != LinkAFPacket && o.Link != LinkAFXDP && o.Link != LinkDPDK:
		return bad("link %q is neither %q nor %q nor %q", o.Link, LinkAFPacket, LinkAFXDP, LinkDPDK)
	case o.Link == LinkDPDK && !dpdk.Available:
		return fmt.Errorf("users: %w: %w", ErrOption, dpdk.ErrUnsupported)
	case o.Link == LinkDPDK && o.DPDK.Port == "" && o.DPDK.Device == "":
		return bad("no DPDK port for the %s link", o.Link)
	case o.Link == LinkDPDK && o.Cores > 1:
		return fmt.Errorf("users: %w: %w", ErrOption, dpdk.CheckCores(o.Cores))
	case o.Links == nil && o.Interface == "" && o.Link != LinkDPDK:
		return bad("no interface for the %s link", o.Link)
	case o.Links != nil && (o.Link != "" || o.Interface != ""):
		return bad("Links set together with Link %q / Interface %q", o.Link, o.Interface)
	case !o.ClientIP.Is4():
		return bad("client IP %v is not an IPv4 address", o.ClientIP)
	case o.ClientIPs < 1 || uint64(ip4(o.ClientIP))+uint64(o.ClientIPs) > 1<<32:
		return bad("%d client IPs from %v leave the address space", o.ClientIPs, o.ClientIP)
	case o.PortMin == 0 || o.PortMin > o.PortMax:
		return bad("client ports %d..%d", o.PortMin, o.PortMax)
	case o.Gateway.IsValid() && !o.Gateway.Is4():
		return bad("gateway %v is not an IPv4 address", o.Gateway)
	case o.Gateway.IsValid() && inRange(ip4(o.Gateway), ip4(o.ClientIP), o.ClientIPs):
		return bad("gateway %v inside the client range", o.Gateway)
	case o.Cores < 1 || o.Cores > int(o.PortMax-o.PortMin)+1:
		return bad("%d cores for %d client ports", o.Cores, int(o.PortMax-o.PortMin)+1)
	case o.Link == LinkAFXDP && o.Cores > 1:
		return bad("AF_XDP with %d cores: nothing steers a connection's frames to its core's queue yet; use 1 core or afpacket", o.Cores)
	case !(o.ConnectRate > 0) || math.IsInf(o.ConnectRate, 1):
		return bad("connect rate %v per second and core", o.ConnectRate)
	case o.MaxUsers < 0:
		return bad("max users %d", o.MaxUsers)
	}
	space := o.tupleSpace()
	if o.MaxUsers == 0 {
		o.MaxUsers = space
	}
	if o.MaxUsers > space {
		return fmt.Errorf("users: %d users need more connections than the %d client IPs × %d ports (%d) hold: add client IPs or ports, or lower --max-users: %w",
			o.MaxUsers, o.ClientIPs, int(o.PortMax-o.PortMin)+1, space, ErrRefused)
	}
	// The tables are allocated at the first spawn: one that cannot fit
	// would end the process there (the Go runtime's fatal out of memory).
	if err := ifcheck.CheckTable(uint64(space), stack.RecordBytes, "the client IPs or ports"); err != nil {
		return fmt.Errorf("users: %w: %w", err, ErrOption)
	}
	return nil
}

// tupleSpace is the number of connection records: client IPs × ports.
func (o *Options) tupleSpace() int64 {
	return int64(o.ClientIPs) * (int64(o.PortMax-o.PortMin) + 1)
}

func ip4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func inRange(ip, first uint32, n int) bool { return ip-first < uint32(n) }
