// Package dpdk is a link.Link over a DPDK ethdev port: a NIC bound to
// vfio-pci, an mlx5 port (bifurcated, no binding) or one of DPDK's virtual
// devices (net_af_packet, net_af_xdp, net_null, net_ring), so that the same
// stack, engine and worker integration run on DPDK. It is built only with
// the dpdk build tag and cgo on Linux (`make build-dpdk`, Debian's
// libdpdk-dev 22.11); in every other binary Open returns an error wrapping
// ErrUnsupported that says how to build it, and `CGO_ENABLED=0 go build
// ./...` is unaffected. doc/dpdk.md is the guide for a real machine.
//
// # The EAL
//
// DPDK's environment abstraction layer is initialised once per process
// (Init, or the first Open with Config.EAL), with sync.Once, on a goroutine
// locked to its OS thread: rte_eal_init pins the thread it runs on to the
// main lcore, so the thread's CPU affinity is restored afterwards and the
// goroutine then exits without unlocking, which ends the thread. A second
// Init with other arguments is refused (ErrInitialised): DPDK cannot be
// initialised twice. Init adds what the arguments leave out: "-l <first
// CPU>", "--in-memory" (or, with --no-huge, which --in-memory refuses,
// "--file-prefix cicada<pid> --no-shconf"), "--no-pci" unless a device is
// allowed or blocked with -a/-b (DPDK's own default would take every
// device bound to vfio-pci or uio), and "--no-telemetry". DPDK's log goes
// to stderr. A secondary process (--proc-type) is refused.
//
// # Threads and lcores
//
// Deliberate difference from dperf: the engine's cores are goroutines
// locked to OS threads, not EAL lcores; no worker lcore is launched
// (rte_eal_remote_launch) and the engine's threads are not registered
// with the EAL. rte_eth_rx_burst and rte_eth_tx_burst are safe from any
// thread for a queue one thread drives, and the link's mbuf pool has no
// per-lcore cache (a non-EAL thread would not use one), so nothing needs an
// lcore id. Extra lcores in -l are started by DPDK and stay idle.
//
// One Link is one port with one RX and one TX queue, driven by one engine
// core: CheckCores refuses more (ErrOneCore). A port is open in one Link
// at a time. Its mbuf pool is made by its first Open and kept while the
// port lives (a stopped port's driver may still hold mbufs of it, released
// by the next configuration), so a port reopened after Close keeps its pool
// size; a device Open probed is closed at Close, and its pool freed. A
// net_af_xdp port's pool is packed (RTE_MEMPOOL_F_NO_IOVA_CONTIG: the
// device does no DMA), because DPDK 22.11's net_af_xdp registers its UMEM
// as mbufs x element size and a pool without hugepages otherwise gives
// each mbuf a page: the mbufs past that size were transmit descriptors the
// kernel refused (tx_invalid_descs). Several queues per port would
// need the NIC to steer each core's port slice to its queue (flow rules),
// which virtual devices do not do; that is left open, as for AF_XDP.
//
// # Frames and ownership: zero copy
//
// Receive hands out the received mbufs' own data as Go slices (unsafe.Slice
// over C memory, never Go memory in C), valid until the next Receive, whose
// C call frees them before receiving the next burst: the ownership window
// of package link, so no copy is needed. Buffer lends an mbuf's data room
// (FrameSize, 2,048 bytes after the 128-byte headroom) from a cache
// refilled MaxBurst mbufs per C call; Transmit maps each frame back to its
// mbuf by the fixed offset of the data room, after checking that the frame
// lies in the link's pool (a frame that does not is dropped and counted as
// TxForeign, never dereferenced), sets the lengths and sends in one C call,
// trying rte_eth_tx_burst three times before dropping (and freeing) what
// the driver did not take. A received frame longer than one mbuf (several
// segments) is dropped (Stats.RxMultiSeg). So each burst crosses into C
// once; no Go pointer is passed to C or kept there: the mbuf pointer
// arrays, data pointers and lengths live in C memory the Link allocated.
//
// # Waiting
//
// A DPDK port has no descriptor to sleep on: with Config.IdleSleep zero
// (the default) Wait returns at once and the core polls, as DPDK programs
// do; tests and shared machines set a short IdleSleep.
//
// # Counters
//
// link.Counters are the link's own (frames the stack received and sent);
// Stats adds the port's (rte_eth_stats_get): PortRxMissed counts frames the
// device dropped because the RX ring was full (the core did not keep up),
// PortRxNoMbuf frames dropped because the pool was empty, PortRxErrors and
// PortTxErrors the driver's errors. doc/dpdk.md says how to read them.
//
// # Devices
//
// Config.Device probes a virtual device after the EAL is up
// (rte_eal_hotplug_add on the vdev bus) and Close removes it, so tests
// make their af_packet and af_xdp devices for interfaces created after
// Init. net_af_packet opens the interface in the network namespace of the
// thread that probes it: the lab tests use lab.HostPair, whose cicada end
// is in the host namespace. OpenRingPair joins two ports by two rte_rings
// (no device, no kernel).
//
// # Linking
//
// Shared (the default, `make build-dpdk`): pkg-config libdpdk and the ring
// driver; the EAL loads every other driver as a plugin from Debian's
// driver directory at Init. Static (`make build-dpdk-static`, tags
// dpdk,dpdk_static): every DPDK library and driver linked in from
// `pkg-config --static --libs libdpdk`; the binary still links glibc and
// the drivers' system libraries (libibverbs, libbpf, libxdp...) dynamically.
//
// A Link is driven by one goroutine at a time and holds no lock (LOCKS.md).
package dpdk
