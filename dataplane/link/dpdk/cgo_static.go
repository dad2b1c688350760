//go:build dpdk && cgo && linux && dpdk_static

package dpdk

// Static linking (`make build-dpdk-static`): no flags here; the Makefile
// passes `pkg-config --cflags libdpdk` in CGO_CFLAGS and `pkg-config
// --static --libs libdpdk` (every driver, whole-archive) in CGO_LDFLAGS,
// so the binary needs no DPDK shared library and no driver directory.

import "C"
