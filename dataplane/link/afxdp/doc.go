// Package afxdp is a link.Link over a Linux AF_XDP socket, in pure Go
// (CGO_ENABLED=0, no libbpf): the frames live in a UMEM the process maps,
// and four rings shared with the kernel hand them back and forth.
//
// # Rings and frame ownership
//
// Open maps a UMEM of Config.Frames frames of Config.FrameSize bytes,
// registers it (XDP_UMEM_REG, the original 24-byte struct, which every
// kernel since 4.18 accepts), sets the four ring sizes, reads
// XDP_MMAP_OFFSETS and maps each ring at the offsets the kernel reports.
// The frames are split once: the first Config.FillRing+Config.RXRing frames
// serve receive (so the fill ring can stay full while the RX ring is full
// too), the rest serve transmit, each part with its own stack of free frame
// addresses, so neither direction can starve the other.
//
//   - receive: free RX frame -> fill ring -> (kernel) -> RX ring -> lent to
//     the caller by Receive -> back on the RX stack at the next Receive.
//   - transmit: free TX frame -> lent by Buffer -> TX ring by Transmit (or
//     straight back to the stack if the ring is full) -> (kernel) ->
//     completion ring -> back on the TX stack.
//
// Every frame is always in exactly one of those places; no path loses one
// (the tests count them). Only a buffer from Buffer that is never passed to
// Transmit is lost until Close, as package link says.
//
// # Memory ordering
//
// Each ring has one producer and one consumer: the process and the kernel.
// The producer writes descriptors and then publishes its index; the consumer
// reads the index and then the descriptors, and publishes its own index
// when done with them. The kernel uses smp_load_acquire/smp_store_release
// on the indices. The indices here are read with atomic.LoadUint32 and
// written with atomic.StoreUint32: Go's atomics are sequentially consistent
// (the Go memory model), which is stronger than acquire/release and so
// suffices; plain loads and stores would not (the compiler could reorder or
// cache them). Each side caches the other side's index and re-reads it only
// when the cached view is short, as the kernel's own xsk code does.
//
// # Wake-ups
//
// With Config.NoNeedWakeup false (the default) the socket is bound with
// XDP_USE_NEED_WAKEUP: Transmit kicks the kernel with sendto() only when the
// TX ring's XDP_RING_NEED_WAKEUP flag is set, and Receive calls poll() with
// a zero timeout only when it found nothing and the fill ring's flag is set.
// Without it every Transmit that queued frames kicks. Wait blocks in poll()
// for an engine with nothing to do.
//
// # The XDP program
//
// Receiving needs an XDP program on the interface that redirects the
// queue's frames into the socket. Open builds one of five eBPF instructions
// in Go (see program), creates an XSKMAP with BPF_MAP_CREATE, loads the
// program with BPF_PROG_LOAD and attaches it with BPF_LINK_CREATE (attach
// type BPF_XDP), in driver (native) mode unless Config.GenericXDP. Frames
// the map has no socket for fall back to XDP_PASS (the low bits of
// bpf_redirect_map's flags), so the kernel stack still sees them. Close
// closes the link, program and map descriptors, which detaches the program;
// the kernel also detaches it if the process dies. Config.NoProgram skips
// all of this for a transmit-only link.
//
// The program's license string is "Dual MIT/GPL". bpf_redirect_map is not a
// GPL-only helper (the kernel's helper prototype has gpl_only false; a test
// loads the program under a non-GPL license to prove it), so any string
// would load; a GPL-compatible one keeps GPL-only helpers available should
// the program grow.
//
// # Modes on veth
//
// veth has no zero-copy AF_XDP support: the socket is bound in copy mode
// (XDP_COPY, the default Mode) and the program attached in native mode,
// which veth supports. ModeZeroCopy asks the kernel for zero copy and fails
// where the driver lacks it; ModeAuto lets the kernel choose.
//
// # Binding again
//
// Tearing an AF_XDP socket down is asynchronous in the kernel: binding a new
// socket to the same queue right after Close (or after another process
// exits) can fail with EBUSY for a moment. Open retries the bind for
// Config.BindRetry (one second by default).
//
// # Threads and namespaces
//
// A Link is driven by one goroutine at a time and holds no lock (see
// LOCKS.md). Open resolves the interface, binds the socket and attaches the
// program in the network namespace of the calling thread; the socket keeps
// that namespace afterwards, so a caller may switch a locked thread into a
// namespace, Open, and switch back.
//
// On systems other than Linux, Open returns ErrUnsupported.
package afxdp
