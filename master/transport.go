package master

import (
	"net"

	"github.com/cicada-load/cicada/protocol/zmtp"
)

// transport is what the master uses of its ZeroMQ ROUTER. Outside tests it
// is a *zmtp.Router; tests of time-driven paths give it an in-memory one,
// which testing/synctest's fake clock can drive (a real socket's poller
// never lets a synctest bubble go idle). Received messages do not go
// through it: the transport hands them to the Handler it was created with
// (the inbox).
type transport interface {
	Addr() net.Addr
	// Send queues a message for a peer and never blocks.
	Send(identity string, frames ...[]byte) error
	Events() <-chan zmtp.Event
	Close() error
}

var _ transport = (*zmtp.Router)(nil)

// listenFunc creates a transport bound to endpoint that hands received
// messages to o.Handler.
type listenFunc func(endpoint string, o zmtp.Options) (transport, error)

// listenZMTP is the real listenFunc: a zmtp.Router.
func listenZMTP(endpoint string, o zmtp.Options) (transport, error) {
	r, err := zmtp.Listen(endpoint, o)
	if err != nil {
		return nil, err
	}
	return r, nil
}
