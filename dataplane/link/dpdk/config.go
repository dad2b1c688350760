package dpdk

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
)

// BuildHint is how to get a binary with the DPDK link.
const BuildHint = "build with `make build-dpdk` (cgo, libdpdk-dev)"

// Sentinels. Every error of the package wraps one of them or
// link.ErrConfig.
var (
	// ErrUnsupported is returned by Init and Open in a binary built
	// without the dpdk tag (or without cgo, or not on Linux).
	ErrUnsupported = errors.New("dpdk: not in this binary: " + BuildHint)
	// ErrEAL wraps a failure of DPDK's environment abstraction layer:
	// rte_eal_init, a device probe, a port or pool that DPDK refused. The
	// message carries rte_errno's text.
	ErrEAL = errors.New("dpdk: EAL")
	// ErrInitialised is returned by Init (and Open) when the EAL is
	// already initialised with other arguments: DPDK initialises once per
	// process and cannot be initialised again.
	ErrInitialised = errors.New("dpdk: EAL already initialised with other arguments")
	// ErrClosed is returned by Close on a closed Link.
	ErrClosed = errors.New("dpdk: link closed")
	// ErrArgs wraps a malformed EAL argument string.
	ErrArgs = errors.New("dpdk: bad EAL argument string")
	// ErrOneCore is returned (wrapped) by CheckCores for more than one
	// engine core: see the package doc.
	ErrOneCore = errors.New("dpdk: one engine core per port: a port's queues are chosen by the device's RSS hash, not by the cores' port slices")
)

// Defaults for zero Config fields.
const (
	DefaultRxRing = 1024
	DefaultTxRing = 1024
	DefaultMbufs  = 8191
	// DefaultFrameSize is the mbuf data room after its headroom
	// (RTE_MBUF_DEFAULT_DATAROOM).
	DefaultFrameSize = 2048
	// MaxBurst is the most frames one Receive or Transmit moves (and the
	// size of the link's transmit buffer cache).
	MaxBurst = 64
)

// Config configures a Link. Port or Device is required.
type Config struct {
	// EAL are the EAL arguments, without the program name; Open calls
	// Init with them (see Init for the defaults it adds). If nil, the EAL
	// must have been initialised already (by Init or an earlier Open).
	EAL []string
	// Device, if set, is a virtual device's devargs
	// ("net_af_packet0,iface=eth1,qpairs=1"): Open probes it after the
	// EAL is up (rte_eal_hotplug_add on the vdev bus) and Close removes
	// it. Port then defaults to its name, the part before the comma.
	Device string
	// Port is the ethdev to drive: its number ("0") or its name as DPDK
	// knows it ("net_null0", "0000:03:00.0", "mlx5_pci"...).
	Port string
	// RxRing and TxRing are the descriptor ring sizes (the driver may
	// adjust them, rte_eth_dev_adjust_nb_rx_tx_desc). If zero,
	// DefaultRxRing and DefaultTxRing.
	RxRing, TxRing int
	// Mbufs is the number of mbufs in the link's pool: they fill the RX
	// ring, the frames lent by Receive, the TX ring and the transmit
	// buffers lent by Buffer. If zero, DefaultMbufs.
	Mbufs int
	// IdleSleep is how long Wait sleeps (at most its argument) when an
	// engine turn had nothing to do. The zero value polls, as DPDK
	// programs do: Wait returns at once and the core spins.
	IdleSleep time.Duration
}

// withDefaults returns c with its zero fields filled in, or an error
// wrapping link.ErrConfig.
func (c Config) withDefaults() (Config, error) {
	if c.Port == "" && c.Device != "" {
		c.Port, _, _ = strings.Cut(c.Device, ",")
	}
	if c.Port == "" {
		return c, fmt.Errorf("%w: dpdk: no port and no device", link.ErrConfig)
	}
	if c.Device != "" {
		if name, _, _ := strings.Cut(c.Device, ","); name != c.Port {
			return c, fmt.Errorf("%w: dpdk: port %q is not device %q's name %q", link.ErrConfig, c.Port, c.Device, name)
		}
	}
	if c.RxRing == 0 {
		c.RxRing = DefaultRxRing
	}
	if c.TxRing == 0 {
		c.TxRing = DefaultTxRing
	}
	if c.Mbufs == 0 {
		c.Mbufs = DefaultMbufs
	}
	for _, r := range []int{c.RxRing, c.TxRing} {
		if r < 32 || r > 1<<15 {
			return c, fmt.Errorf("%w: dpdk: ring size %d not in [32, 32768]", link.ErrConfig, r)
		}
	}
	if need := c.RxRing + c.TxRing + 2*MaxBurst; c.Mbufs < need || c.Mbufs > 1<<24 {
		return c, fmt.Errorf("%w: dpdk: %d mbufs; want from %d (both rings and two bursts) to %d",
			link.ErrConfig, c.Mbufs, need, 1<<24)
	}
	if c.IdleSleep < 0 {
		return c, fmt.Errorf("%w: dpdk: negative idle sleep %v", link.ErrConfig, c.IdleSleep)
	}
	return c, nil
}

// CheckCores returns nil for one engine core and an error wrapping
// ErrOneCore for more (link.ErrConfig for fewer): the check a caller makes
// before running an engine over one DPDK port.
func CheckCores(n int) error {
	if n > 1 {
		return fmt.Errorf("dpdk: %d cores asked: %w", n, ErrOneCore)
	}
	if n < 1 {
		return fmt.Errorf("dpdk: %d cores asked: %w", n, link.ErrConfig)
	}
	return nil
}

// MaxIdleSleep bounds Config.IdleSleep as ParseIdleSleep accepts it: a
// core asleep longer than this lets its RX ring overflow at any real rate.
const MaxIdleSleep = 10 * time.Millisecond

// ParseIdleSleep parses the command line's idle sleep, a Go duration
// ("50us", "1ms"); "" and "0" poll without pause. It refuses negative
// values and values above MaxIdleSleep, wrapping link.ErrConfig.
func ParseIdleSleep(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: dpdk: idle sleep %q is not a duration such as 50us or 1ms", link.ErrConfig, s)
	}
	if d < 0 || d > MaxIdleSleep {
		return 0, fmt.Errorf("%w: dpdk: idle sleep %v not in [0, %v]", link.ErrConfig, d, MaxIdleSleep)
	}
	return d, nil
}

// SplitArgs splits an EAL argument string ("-l 0 --vdev 'net_null0'")
// into arguments the way a POSIX shell splits words: blanks separate,
// single quotes keep everything literally, double quotes keep everything
// but a backslash before `"` or `\`, and a backslash outside quotes keeps
// the next character. Nothing is expanded. An unterminated quote or a
// trailing backslash is an error wrapping ErrArgs.
func SplitArgs(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		in    bool // inside a word
		quote byte
	)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case quote == '"':
			switch {
			case ch == '"':
				quote = 0
			case ch == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%w: trailing backslash in %q", ErrArgs, s)
			}
			i++
			cur.WriteByte(s[i])
			in = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%w: unterminated %c quote in %q", ErrArgs, quote, s)
	}
	if in {
		args = append(args, cur.String())
	}
	return args, nil
}

// ealArgs is the argument vector Init hands rte_eal_init: the program
// name, the caller's arguments, and the defaults for what they leave out:
//
//   - no lcore option (-l, -c, --lcores): "-l" and the first CPU the
//     process may run on (only the main lcore: see the package doc);
//   - no --file-prefix and no --in-memory: "--in-memory", so that two
//     processes never share DPDK's runtime files, or with --no-huge
//     (which DPDK runs in legacy memory mode, refused with --in-memory)
//     "--file-prefix cicada<pid> --no-shconf";
//   - no device allowed or blocked (-a, --allow, -b, --block, --no-pci):
//     "--no-pci", so DPDK probes no PCI device it was not named (DPDK's
//     own default probes every device bound to vfio-pci or uio);
//   - "--no-telemetry" unless --telemetry is given.
//
// Options that need a process DPDK cannot give it are refused: --proc-type
// other than primary (a secondary process attaches to another's memory).
func ealArgs(user []string, firstCPU, pid int) ([]string, error) {
	has := func(names ...string) bool {
		for _, a := range user {
			for _, n := range names {
				if a == n || strings.HasPrefix(a, n+"=") || (len(n) == 2 && strings.HasPrefix(a, n) && len(a) > 2) {
					return true
				}
			}
		}
		return false
	}
	for i, a := range user {
		v, ok := strings.CutPrefix(a, "--proc-type=")
		if a == "--proc-type" && i+1 < len(user) {
			v, ok = user[i+1], true
		}
		if ok && v != "primary" {
			return nil, fmt.Errorf("%w: dpdk: --proc-type %s: cicada runs as a primary process only", link.ErrConfig, v)
		}
	}
	out := append([]string{"cicada"}, user...)
	if !has("-l", "-c", "--lcores") {
		out = append(out, "-l", strconv.Itoa(firstCPU))
	}
	switch {
	case has("--file-prefix", "--in-memory"):
	case has("--no-huge"):
		// --no-huge implies --legacy-mem, which --in-memory refuses.
		out = append(out, "--file-prefix", "cicada"+strconv.Itoa(pid), "--no-shconf")
	default:
		out = append(out, "--in-memory")
	}
	if !has("-a", "--allow", "-b", "--block", "--no-pci", "--pci-whitelist", "--pci-blacklist") {
		out = append(out, "--no-pci")
	}
	if !has("--telemetry", "--no-telemetry") {
		out = append(out, "--no-telemetry")
	}
	return out, nil
}

// FilePrefix is a --file-prefix unique to this process ("cicada<pid>"),
// for callers that give one instead of --in-memory.
func FilePrefix() string { return "cicada" + strconv.Itoa(os.Getpid()) }

// Stats are a Link's counts beyond link.Counters, and the port's own
// (rte_eth_stats_get).
type Stats struct {
	// RxMultiSeg counts received frames that spanned several mbufs (larger
	// than FrameSize): dropped, never lent.
	RxMultiSeg uint64
	// TxForeign counts frames passed to Transmit that did not come from
	// Buffer (dropped, counted in link.Counters.TxDropped too).
	TxForeign uint64
	// TxRetries counts rte_eth_tx_burst calls beyond the first of a
	// Transmit (the TX ring was full; the link tries three times).
	TxRetries uint64
	// PoolFree is how many mbufs of the link's pool are free
	// (rte_mempool_avail_count): the rest are in the rings, lent to the
	// caller or in the link's transmit cache.
	PoolFree uint64
	// Port counters, as the driver reports them: frames received and
	// sent, frames the NIC dropped for want of a descriptor (imissed),
	// receive and transmit errors, and mbuf allocation failures on receive.
	PortRxPackets, PortTxPackets, PortRxMissed uint64
	PortRxErrors, PortTxErrors, PortRxNoMbuf   uint64
	PortRxBytes, PortTxBytes                   uint64
}
