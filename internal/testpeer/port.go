package testpeer

import (
	"fmt"
	"net"
)

// PickPort returns a TCP port on 127.0.0.1 that was free a moment ago: the
// kernel picks it for a listener that is closed at once. Another process may
// take it before the caller binds it; peers that cannot bind fail to start
// with a clear error rather than serve the wrong test.
func PickPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testpeer: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePort is PickPort for tests: it fails t on error.
func FreePort(t T) int {
	t.Helper()
	p, err := PickPort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}
