//go:build !linux

package zmtp

import "errors"

// poller is Linux only; elsewhere every connection is served by its own
// reader and writer goroutines.
type poller struct{}

type rawConn struct {
	pl *poller
	p  *peer
}

func newPoller(*Router) (*poller, error) { return nil, errors.New("zmtp: no poller on this system") }

func (*poller) run()                          {}
func (*poller) wake()                         {}
func (*poller) kill(*rawConn)                 {}
func (*poller) adopt(*conn) (*rawConn, error) { return nil, errors.New("zmtp: no poller") }
func (*poller) add(*rawConn)                  {}
func (*rawConn) prepare(*peer, []byte)        {}
func (*rawConn) flush()                       {}
