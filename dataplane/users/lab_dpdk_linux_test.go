//go:build dpdk && cgo && linux

package users

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/worker"
)

// TestLabDPDKUsersToNginx runs the runtime over its own DPDK link (Link
// LinkDPDK: the default link factory initialises the EAL and probes a
// net_af_packet device on the host end of a lab.HostPair) against nginx in
// the server namespace: 100 users, then Stop; the recorder holds exactly
// the requests nginx logged, none failed. Root and a binary built with the
// dpdk tag (make test-dpdk).
func TestLabDPDKUsersToNginx(t *testing.T) {
	p, err := labtest.New(t).HostPair()
	if err != nil {
		t.Fatalf("HostPair = %v", err)
	}
	dev := "net_af_packet_" + p.Cicada.Name + ",iface=" + p.Cicada.Name + ",qpairs=1,framecnt=4096"
	reqs := usersToNginx(t, p.Server, 100, func(sc worker.Scenario) (*Runtime, error) {
		return New(Options{Link: LinkDPDK,
			DPDK:     dpdk.Config{EAL: []string{"--no-huge", "-m", "256", "--log-level", "*:warning"}, Device: dev, IdleSleep: 50 * time.Microsecond},
			ClientIP: netip.MustParseAddr(lab.ClientIP), PortMin: 10000, PortMax: 10999, ConnectRate: 1000}, sc)
	})
	t.Logf("%d requests of 100 users over DPDK's net_af_packet, all logged by nginx", reqs)
}
