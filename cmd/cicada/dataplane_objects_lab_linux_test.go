package main

import (
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// `cicada target --dataplane afpacket` serves /bytes/<n> to a kernel client
// (curl in the client namespace, through the lab's device): objects whole,
// HEAD's headers, the kernel target's 400 for a bad size (issue 17).
func TestTargetDataplaneServesObjects(t *testing.T) {
	testpeer.RequirePeer(t, "curl")
	d := dataplaneTarget(t, lab.DUTConfig{})
	labtest.KernelClient(t, d)
	// The target's table holds client ports 10000-60000.
	if err := d.Client.Exec("sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=32768 60000"); err != nil {
		t.Fatal(err)
	}
	url := "http://" + lab.ServerIP + "/bytes/"
	labtest.CheckObjects(t, d.Client, url, []int{0, 1, 1460, 65536, 1 << 20}, "-1")
	head, err := d.Client.Output("curl", "-sS", "--max-time", "20", "-I", url+"12345")
	if err != nil || !strings.Contains(head, "HTTP/1.1 200 OK") || !strings.Contains(head, "Content-Length: 12345") {
		t.Fatalf("HEAD: %v\n%s", err, head)
	}
}
