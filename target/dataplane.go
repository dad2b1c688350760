package target

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/link/afxdp"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/stack"
)

// ErrDataplane is wrapped by NewDataplane for options it refuses.
var ErrDataplane = errors.New("target: invalid data plane options")

// Data plane target defaults.
const (
	// DefaultDataplanePort is DataplaneOptions.Listen's default port.
	DefaultDataplanePort = 80
	// DataplaneIdleTimeout is how long the data plane target keeps an idle
	// keep-alive connection when DataplaneOptions.IdleTimeout is zero:
	// long enough to hold connections for any test.
	DataplaneIdleTimeout = 24 * time.Hour
	// DataplaneRetransmitTimeout and DataplaneMaxRetries are the server
	// stack's retransmission settings: on a busy shared machine the
	// stack's 200 ms default set off retransmission storms (see
	// dataplane/README.md), so the target waits 1 s, 8 times.
	DataplaneRetransmitTimeout = time.Second
	DataplaneMaxRetries        = 8
	// DefaultReportEvery is DataplaneOptions.ReportEvery's default.
	DefaultReportEvery = 5 * time.Second
)

// DataplaneOptions configure a Dataplane target: a userspace server stack
// answering for one address and port, over an AF_PACKET or AF_XDP link.
type DataplaneOptions struct {
	// Link is "afpacket", "afxdp" or "dpdk" (a binary built with the dpdk
	// tag; refused with dpdk.ErrUnsupported in others); required.
	Link string
	// Interface is the link's interface, in the calling thread's network
	// namespace; required but with "dpdk". ifcheck.Check runs on it first,
	// with the server address as the owned range.
	Interface string
	// DPDK configures the "dpdk" link: EAL arguments and port.
	DPDK dpdk.Config
	// Listen is the server address and port the stack answers for
	// (IPv4; port 0 means DefaultDataplanePort); required.
	Listen netip.AddrPort
	// Clients is the client range the peer's stack uses: the table holds
	// one record per client address and port; required.
	Clients ifcheck.Range
	// PortMin and PortMax are the client ports. If both are zero, the
	// stack's defaults (10000-59999).
	PortMin, PortMax uint16
	// Gateway is the next hop towards the clients, resolved by ARP. If
	// invalid (zero), the server learns the MAC of the first frame from
	// the client range.
	Gateway netip.Addr
	// Cores is the number of polling loops, one per core, each owning a
	// slice of the client ports (engine.Split). 0 means 1. More than one
	// needs Link "afpacket" (an AF_PACKET fanout group spreads the frames
	// by client port); AF_XDP would need one queue per core, which a veth
	// does not have, and is refused.
	Cores int
	// BodySize is the page's body size. If zero, stack.DefaultBodySize
	// (128).
	BodySize int
	// IdleTimeout closes keep-alive connections idle this long. If zero,
	// DataplaneIdleTimeout.
	IdleTimeout time.Duration
	// Dedicated turns ifcheck's refusals into warnings.
	Dedicated bool
	// ReportEvery spaces calls to Report while Run runs. If zero,
	// DefaultReportEvery.
	ReportEvery time.Duration
	// Report, if set, is called every ReportEvery and once when Run ends,
	// with the stack's and the link's counters, on Run's reporting
	// goroutine (never concurrently with itself).
	Report func(stack.Counters, link.Counters)
	// Logger receives ifcheck's warnings. If nil, nothing is logged.
	Logger *slog.Logger
}

// Dataplane is `cicada target --dataplane`: the fixed page served by a
// userspace stack to any number of connections (one 80-byte record each,
// no file descriptor), so two cicada processes can test each other far
// past a kernel server's file limit. It serves /bytes/<n> as the kernel
// target does (0..MaxObjectSize bytes of the same pattern, 400 with the
// same message for a bad size), generated per segment without a buffer,
// and HEAD of any path. Deliberate differences from the kernel target
// (Server): the page on every other GET path (no /status, /delay or stats
// routes), 405 for methods other than GET and HEAD (also on /bytes/), the
// raw request target matched (no percent-decoding or absolute form), plain
// HTTP/1.1 only.
type Dataplane struct {
	opts   DataplaneOptions
	links  []dpLink
	stacks []*stack.Stack
	engine *engine.Engine

	mu    sync.Mutex
	ran   bool
	lctr  []link.Counters // per core, published by Every
	close sync.Once
	cerr  error
}

// dpLink is a link the target opened.
type dpLink interface {
	link.Link
	Close() error
}

// NewDataplane checks the interface (ifcheck), opens the links and builds
// one server stack per core. Errors wrap ErrDataplane, an ifcheck error or
// the link's; the caller must Close a Dataplane it does not Run.
func NewDataplane(o DataplaneOptions) (*Dataplane, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("target: "+format+": %w", append(a, ErrDataplane)...)
	}
	if o.Cores == 0 {
		o.Cores = 1
	}
	switch {
	case o.Link != "afpacket" && o.Link != "afxdp" && o.Link != "dpdk":
		return nil, bad("link %q is neither afpacket, afxdp nor dpdk", o.Link)
	case o.Link == "dpdk" && !dpdk.Available:
		return nil, fmt.Errorf("target: %w: %w", ErrDataplane, dpdk.ErrUnsupported)
	case o.Link != "dpdk" && o.Interface == "":
		return nil, bad("no interface for the %s link", o.Link)
	case !o.Listen.Addr().Unmap().Is4():
		return nil, bad("listen address %v is not IPv4", o.Listen)
	case !o.Clients.Valid():
		return nil, bad("no client range")
	case o.Clients.Contains(o.Listen.Addr().Unmap()):
		return nil, bad("listen address %v inside the client range %v", o.Listen.Addr(), o.Clients)
	case o.Gateway.IsValid() && !o.Gateway.Is4():
		return nil, bad("gateway %v is not IPv4", o.Gateway)
	case o.Cores < 0:
		return nil, bad("negative cores")
	case o.Cores > 1 && o.Link != "afpacket":
		return nil, bad("%d cores over %s: more than one core needs afpacket (a fanout group)", o.Cores, o.Link)
	case o.IdleTimeout < 0 || o.ReportEvery < 0:
		return nil, bad("negative IdleTimeout or ReportEvery")
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DataplaneIdleTimeout
	}
	if o.ReportEvery == 0 {
		o.ReportEvery = DefaultReportEvery
	}
	if o.Listen.Port() == 0 {
		o.Listen = netip.AddrPortFrom(o.Listen.Addr(), DefaultDataplanePort)
	}
	if o.PortMin == 0 && o.PortMax == 0 {
		o.PortMin, o.PortMax = stack.DefaultPortMin, stack.DefaultPortMax
	}
	slices, err := engine.Split(o.PortMin, o.PortMax, o.Cores)
	if err != nil {
		return nil, bad("%d cores over ports %d-%d: %v", o.Cores, o.PortMin, o.PortMax, err)
	}
	records := uint64(o.Clients.Count) * (uint64(o.PortMax-o.PortMin) + 1)
	if err := ifcheck.CheckTable(records, stack.RecordBytes, "--client-ips or --client-ports"); err != nil {
		return nil, fmt.Errorf("target: %w: %w", err, ErrDataplane)
	}
	server := o.Listen.Addr().Unmap()
	// A DPDK port bound to vfio-pci has no kernel interface to check.
	if o.Interface != "" {
		warnings, err := ifcheck.Check(ifcheck.Options{Interface: o.Interface, Owned: ifcheck.Single(server), What: "server address", Dedicated: o.Dedicated})
		if err != nil {
			return nil, err // already "ifcheck: ..."
		}
		for _, w := range warnings {
			if o.Logger != nil {
				o.Logger.Warn(w)
			}
		}
	}
	d := &Dataplane{opts: o, lctr: make([]link.Counters, o.Cores)}
	if err := d.open(slices); err != nil {
		return nil, err
	}
	cores := make([]engine.Core, o.Cores)
	for k, sl := range slices {
		cfg := stack.Config{
			Mode: stack.Server, Link: d.links[k],
			ClientIP: ip4(o.Clients.First), ClientIPs: o.Clients.Count, PortMin: sl[0], PortMax: sl[1],
			ServerIP: ip4(server), ServerPort: o.Listen.Port(),
			RetransmitTimeout: DataplaneRetransmitTimeout, MaxRetries: DataplaneMaxRetries,
			IdleTimeout: o.IdleTimeout, BodySize: o.BodySize,
		}
		if o.Gateway.IsValid() {
			cfg.Gateway = ip4(o.Gateway)
		}
		s, err := stack.New(cfg)
		if err != nil {
			_ = d.Close()
			return nil, fmt.Errorf("target: %w", err)
		}
		d.stacks = append(d.stacks, s)
		cores[k] = engine.Core{Stack: s}
		if w, ok := d.links[k].(engine.Waiter); ok {
			cores[k].Waiter = w
		}
	}
	d.engine, err = engine.New(engine.Config{Cores: cores, LockThreads: true, Every: func(k int, _ *stack.Stack, _ int64) {
		c := d.links[k].Counters()
		d.mu.Lock()
		d.lctr[k] = c
		d.mu.Unlock()
	}})
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("target: %w", err)
	}
	return d, nil
}

// open opens one link per port slice.
func (d *Dataplane) open(slices [][2]uint16) error {
	o := d.opts
	switch {
	case o.Link == "dpdk":
		l, err := dpdk.Open(o.DPDK)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		d.links = []dpLink{l}
		return nil
	case o.Link == "afxdp":
		l, err := afxdp.Open(afxdp.Config{Interface: o.Interface})
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		d.links = []dpLink{xdpLink{l}}
		return nil
	}
	ifc, err := net.InterfaceByName(o.Interface)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	cfg := afpacket.Config{Index: ifc.Index}
	if len(slices) == 1 {
		l, err := afpacket.Open(cfg)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		d.links = []dpLink{l}
		return nil
	}
	// The group id only has to be unique among this namespace's groups.
	ls, err := afpacket.OpenFanout(cfg, afpacket.Fanout{Group: uint16(os.Getpid()), Slices: slices, Side: afpacket.ServerSide})
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	for _, l := range ls {
		d.links = append(d.links, l)
	}
	return nil
}

// xdpLink adapts afxdp's Wait, whose error is dropped: a failed poll is
// retried on the next idle turn.
type xdpLink struct{ *afxdp.Link }

func (x xdpLink) Wait(d time.Duration) { _ = x.Link.Wait(d) }

func ip4(a netip.Addr) uint32 { b := a.Unmap().As4(); return binary.BigEndian.Uint32(b[:]) }

// Conns returns the size of the connection tables (client addresses x
// ports, over every core).
func (d *Dataplane) Conns() int {
	n := 0
	for _, s := range d.stacks {
		n += s.Conns()
	}
	return n
}

// Counters returns the stacks' counters summed over the cores and the
// links' summed likewise, as last published (once a second while Run runs,
// final after it); safe for concurrent use.
func (d *Dataplane) Counters() (stack.Counters, link.Counters) {
	sum, _ := d.engine.Counters()
	var l link.Counters
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.lctr {
		l.RxFrames += c.RxFrames
		l.RxBytes += c.RxBytes
		l.TxFrames += c.TxFrames
		l.TxBytes += c.TxBytes
		l.TxNoBuffer += c.TxNoBuffer
		l.TxDropped += c.TxDropped
	}
	return sum, l
}

// Run serves until ctx ends, then closes the links and returns nil; it
// returns ErrClosed if the target already ran or was closed.
func (d *Dataplane) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.ran {
		d.mu.Unlock()
		return ErrClosed
	}
	d.ran = true
	d.mu.Unlock()
	defer d.Close()
	reportDone, stopReport := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reportDone)
		t := time.NewTicker(d.opts.ReportEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				d.report()
			case <-stopReport:
				return
			}
		}
	}()
	err := d.engine.Run(ctx)
	close(stopReport)
	<-reportDone
	d.report()
	if err != nil && !errors.Is(err, engine.ErrStopped) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("target: %w", err)
	}
	return nil
}

func (d *Dataplane) report() {
	if d.opts.Report != nil {
		d.opts.Report(d.Counters())
	}
}

// Close closes the links; Run calls it on return. Call it only for a
// target that is not run (while Run runs, cancel its context instead).
// Idempotent; a target closed before Run does not run.
func (d *Dataplane) Close() error {
	d.close.Do(func() {
		d.mu.Lock()
		d.ran = true
		d.mu.Unlock()
		var errs []error
		for _, l := range d.links {
			errs = append(errs, l.Close())
		}
		d.cerr = errors.Join(errs...)
	})
	return d.cerr
}
