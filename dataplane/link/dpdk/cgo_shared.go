//go:build dpdk && cgo && linux && !dpdk_static

package dpdk

// Shared linking (the default of `make build-dpdk`): the DPDK libraries
// from pkg-config, and the ring driver for OpenRingPair. The EAL loads the
// other drivers (net_af_packet, net_af_xdp, net_null, mlx5...) as plugins
// from its driver directory at Init.

// #cgo pkg-config: libdpdk
// #cgo LDFLAGS: -lrte_net_ring
import "C"
