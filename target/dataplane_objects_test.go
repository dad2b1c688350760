package target

import (
	"io"
	"net/http"
	"testing"

	"github.com/cicada-load/cicada/dataplane/stack"
)

// TestDataplaneObjectsContract: the data plane's server answers /bytes/<n>
// with the kernel target's bounds and 400 message (its own tests check it
// serves them).
func TestDataplaneObjectsContract(t *testing.T) {
	if stack.MaxObjectSize != MaxObjectSize {
		t.Fatalf("stack.MaxObjectSize %d; the kernel target's is %d", stack.MaxObjectSize, MaxObjectSize)
	}
	s := startServer(t, Options{})
	resp, err := http.Get(s.URL() + "/bytes/x")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 400 || string(body) != stack.BadObjectSizeBody {
		t.Fatalf("kernel target: %d %q (%v); the data plane answers 400 %q", resp.StatusCode, body, err, stack.BadObjectSizeBody)
	}
}
