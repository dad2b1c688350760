package target

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/link/afxdp"
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
	// Link is "afpacket" or "afxdp"; required.
	Link string
	// Interface is the link's interface, in the calling thread's network
	// namespace; required. ifcheck.Check runs on it first, with the
	// server address as the owned range.
	Interface string
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
	// Cores is the number of polling loops. 0 and 1 mean one; more is
	// refused until the multi-core engine drives the target.
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
// past a kernel server's file limit. Deliberate differences from the kernel
// target (Server): one page on every GET path (no /status, /delay or stats
// routes), 405 for other methods, plain HTTP/1.1 only.
type Dataplane struct {
	opts DataplaneOptions
	link interface {
		link.Link
		Close() error
	}
	wait  engine.Waiter
	stack *stack.Stack

	mu      sync.Mutex
	ran     bool
	last    stack.Counters
	lastL   link.Counters
	lastAt  time.Time
	closeMu sync.Once
}

// NewDataplane checks the interface (ifcheck), opens the link and builds
// the server stack. Errors wrap ErrDataplane, an ifcheck error or the
// link's; the caller must Close a Dataplane it does not Run.
func NewDataplane(o DataplaneOptions) (*Dataplane, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("target: "+format+": %w", append(a, ErrDataplane)...)
	}
	switch {
	case o.Link != "afpacket" && o.Link != "afxdp":
		return nil, bad("link %q is neither afpacket nor afxdp", o.Link)
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
	case o.Cores > 1:
		return nil, bad("%d cores: the target runs one polling loop for now", o.Cores)
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
	server := o.Listen.Addr().Unmap()
	warnings, err := ifcheck.Check(ifcheck.Options{Interface: o.Interface, Owned: ifcheck.Single(server), What: "server address", Dedicated: o.Dedicated})
	if err != nil {
		return nil, err // already "ifcheck: ..."
	}
	for _, w := range warnings {
		if o.Logger != nil {
			o.Logger.Warn(w)
		}
	}
	d := &Dataplane{opts: o}
	switch o.Link {
	case "afpacket":
		ifc, err := net.InterfaceByName(o.Interface)
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		l, err := afpacket.Open(afpacket.Config{Index: ifc.Index})
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		d.link, d.wait = l, l
	case "afxdp":
		l, err := afxdp.Open(afxdp.Config{Interface: o.Interface})
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		d.link, d.wait = l, waitAdapter{l}
	}
	cfg := stack.Config{
		Mode: stack.Server, Link: d.link,
		ClientIP: ip4(o.Clients.First), ClientIPs: o.Clients.Count, PortMin: o.PortMin, PortMax: o.PortMax,
		ServerIP: ip4(server), ServerPort: o.Listen.Port(),
		RetransmitTimeout: DataplaneRetransmitTimeout, MaxRetries: DataplaneMaxRetries,
		IdleTimeout: o.IdleTimeout, BodySize: o.BodySize,
	}
	if o.Gateway.IsValid() {
		cfg.Gateway = ip4(o.Gateway)
	}
	if d.stack, err = stack.New(cfg); err != nil {
		_ = d.link.Close()
		return nil, fmt.Errorf("target: %w", err)
	}
	return d, nil
}

// waitAdapter drops afxdp's Wait error (a failed poll is retried on the
// next idle turn).
type waitAdapter struct{ l *afxdp.Link }

func (w waitAdapter) Wait(d time.Duration) { _ = w.l.Wait(d) }

func ip4(a netip.Addr) uint32 { b := a.Unmap().As4(); return binary.BigEndian.Uint32(b[:]) }

// Conns returns the size of the connection table (client addresses x
// ports).
func (d *Dataplane) Conns() int { return d.stack.Conns() }

// Counters returns the stack's and the link's counters as of the last
// snapshot (about every 100 ms while Run runs, final after it); safe for
// concurrent use.
func (d *Dataplane) Counters() (stack.Counters, link.Counters) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last, d.lastL
}

// publishEvery spaces the snapshots Counters returns.
const publishEvery = 100 * time.Millisecond

// Run serves until ctx ends, then closes the link and returns nil; it
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
	reportDone := make(chan struct{})
	stopReport := make(chan struct{})
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
	loop := &engine.Loop{Stack: d.stack, Waiter: d.wait, Until: func(c *stack.Counters, _ int) bool {
		if now := time.Now(); now.Sub(d.lastAt) >= publishEvery {
			d.lastAt = now
			l := d.link.Counters()
			d.mu.Lock()
			d.last, d.lastL = *c, l
			d.mu.Unlock()
		}
		return false
	}}
	err := loop.Run(ctx)
	c, l := d.stack.Counters(), d.link.Counters()
	d.mu.Lock()
	d.last, d.lastL = c, l
	d.mu.Unlock()
	close(stopReport)
	<-reportDone
	d.report()
	if err != nil && !errors.Is(err, engine.ErrStopped) {
		return fmt.Errorf("target: %w", err)
	}
	return nil
}

func (d *Dataplane) report() {
	if d.opts.Report != nil {
		d.opts.Report(d.Counters())
	}
}

// Close closes the link; Run calls it on return. Idempotent.
func (d *Dataplane) Close() error {
	var err error
	d.closeMu.Do(func() {
		d.mu.Lock()
		d.ran = true
		d.mu.Unlock()
		err = d.link.Close()
	})
	return err
}
