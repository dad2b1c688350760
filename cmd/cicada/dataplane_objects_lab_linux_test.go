package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// `cicada target --dataplane afpacket` serves /bytes/<n> to a kernel client
// (curl in the client namespace, through the lab's device): objects whole,
// HEAD's headers, the kernel target's 400 for a bad size (issue 17).
func TestTargetDataplaneServesObjects(t *testing.T) {
	testpeer.RequirePeer(t, "curl")
	d := dataplaneTarget(t, lab.DUTConfig{})
	for _, c := range [][]string{
		{"ip", "addr", "add", lab.ClientIP + "/24", "dev", d.Cicada.Name},
		{"ip", "route", "add", "198.18.1.0/24", "via", lab.Gateway},
		// The target's table holds client ports 10000-60000.
		{"sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=32768 60000"},
	} {
		if err := d.Client.Exec(c[0], c[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	url := "http://" + lab.ServerIP + "/bytes/"
	sizes := []int{0, 1, 1460, 65536, 1 << 20}
	var args []string
	for k, n := range sizes {
		args = append(args, "--next", "-sS", "--max-time", "20", "-o", filepath.Join(dir, strconv.Itoa(k)), url+strconv.Itoa(n))
	}
	args = append(args, "--next", "-sS", "--max-time", "20", "-o", filepath.Join(dir, "bad"), "-w", "%{http_code}", url+"-1")
	if out, err := d.Client.Output("curl", args[1:]...); err != nil || out != "400" {
		t.Fatalf("curl: %v, the bad size's status %q", err, out)
	}
	for k, n := range sizes {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(k)))
		if err != nil || len(b) != n {
			t.Fatalf("/bytes/%d: %d bytes (%v)", n, len(b), err)
		}
		for i, c := range b {
			if c != 'a'+byte(i%26) {
				t.Fatalf("/bytes/%d: byte %d is %q", n, i, c)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "bad")); string(b) != "size must be 0-16777216 bytes\n" {
		t.Fatalf("the 400's body %q", b)
	}
	head, err := d.Client.Output("curl", "-sS", "--max-time", "20", "-I", url+"12345")
	if err != nil || !strings.Contains(head, "HTTP/1.1 200 OK") || !strings.Contains(head, "Content-Length: 12345") {
		t.Fatalf("HEAD: %v\n%s", err, head)
	}
}
