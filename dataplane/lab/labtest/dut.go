//go:build linux

package labtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
)

// KernelClient gives the client end of d's chain a kernel address,
// lab.ClientIP, and a route to the server's network through the device,
// for a kernel client (curl, wrk, `cicada bench` without a data plane).
func KernelClient(t testing.TB, d *lab.DUT) {
	t.Helper()
	execAll(t, d.Client, [][]string{
		{"addr", "add", lab.ClientIP + "/24", "dev", d.Cicada.Name},
		{"route", "add", "198.18.1.0/24", "via", lab.Gateway},
	})
}

// KernelServer gives the server end of d's chain a kernel address,
// lab.ServerNet, and a route to the clients' range through the device, for
// a kernel server (nginx, `cicada target` without a data plane).
func KernelServer(t testing.TB, d *lab.DUT) {
	t.Helper()
	execAll(t, d.Server, [][]string{
		{"addr", "add", lab.ServerNet, "dev", d.Peer.Name},
		{"route", "add", lab.ClientRange, "via", lab.DUTServerGateway},
	})
}

func execAll(t testing.TB, ns *lab.Netns, cmds [][]string) {
	t.Helper()
	for _, args := range cmds {
		if err := ns.Exec("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
}

// CheckObjects fetches base+"<n>" for each of sizes with one curl in ns
// (keep-alive, several objects on a connection, each bounded by 20 s) and
// checks every byte of each (the /bytes/<n> pattern, 'a'+i%26), then that
// base+bad answers 400 with the size's error as its body.
func CheckObjects(t testing.TB, ns *lab.Netns, base string, sizes []int, bad string) {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for k, n := range sizes {
		if k > 0 {
			args = append(args, "--next")
		}
		args = append(args, "-sS", "--max-time", "20", "-o", filepath.Join(dir, strconv.Itoa(k)), base+strconv.Itoa(n))
	}
	args = append(args, "--next", "-sS", "--max-time", "20", "-o", filepath.Join(dir, "bad"), "-w", "%{http_code}", base+bad)
	if out, err := ns.Output("curl", args...); err != nil || out != "400" {
		t.Fatalf("curl: %v, the bad size's status %q", err, out)
	}
	for k, n := range sizes {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(k)))
		if err != nil || len(b) != n {
			t.Fatalf("%s%d: %d bytes (%v)", base, n, len(b), err)
		}
		for i, c := range b {
			if c != 'a'+byte(i%26) {
				t.Fatalf("%s%d: byte %d is %q", base, n, i, c)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "bad")); string(b) != "size must be 0-16777216 bytes\n" {
		t.Fatalf("the 400's body %q", b)
	}
}
