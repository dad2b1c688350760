package zmtp

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these with %w
// and add detail; branch on them with errors.Is.
var (
	// ErrClosed is returned by operations on a closed Router or Dealer, and is
	// the Err of the Disconnected events that Close causes.
	ErrClosed = errors.New("zmtp: closed")
	// ErrUnknownPeer is returned by Router.Send for an identity that has no
	// connected peer.
	ErrUnknownPeer = errors.New("zmtp: unknown peer")
	// ErrQueueFull is returned by Send when the bounded send queue
	// (Options.SendQueue) is full.
	ErrQueueFull = errors.New("zmtp: send queue full")
	// ErrEmptyMessage is returned by Send when it is given no frames.
	ErrEmptyMessage = errors.New("zmtp: message has no frames")
	// ErrEndpoint is returned by Listen and Dial for a malformed endpoint.
	ErrEndpoint = errors.New("zmtp: invalid endpoint")
	// ErrInvalidIdentity is returned by Dial for an identity that breaks the
	// rules (at most 255 bytes, not starting with 0x00, valid UTF-8), and
	// reported for peers announcing an identity that starts with 0x00 or is
	// longer than 255 bytes.
	ErrInvalidIdentity = errors.New("zmtp: invalid identity")
	// ErrBadGreeting reports a peer whose first bytes are not a ZMTP
	// signature (garbage, an HTTP request, ZMTP 1.0).
	ErrBadGreeting = errors.New("zmtp: not a ZMTP greeting")
	// ErrVersion reports a peer speaking ZMTP older than 3.0.
	ErrVersion = errors.New("zmtp: unsupported ZMTP version")
	// ErrMechanism reports a peer asking for a security mechanism we do not
	// speak (CURVE, GSSAPI), or for PLAIN when we have no Options.Plain.
	ErrMechanism = errors.New("zmtp: unsupported security mechanism")
	// ErrAuth reports a failed PLAIN authentication: on a Router with
	// Options.Plain, a peer without PLAIN, with wrong credentials or with a
	// malformed HELLO; on a Dealer with Options.Plain, a peer that does not
	// offer PLAIN or refuses our credentials. The Router counts these
	// (Router.AuthRefusals).
	ErrAuth = errors.New("zmtp: authentication failed")
	// ErrBadOptions is returned by Listen and Dial for Options they cannot
	// honour (for example PLAIN credentials longer than 255 bytes).
	ErrBadOptions = errors.New("zmtp: invalid options")
	// ErrSocketType reports a peer whose socket type cannot talk to ours (for
	// example PUB), or that announced none.
	ErrSocketType = errors.New("zmtp: incompatible socket type")
	// ErrProtocol reports a malformed frame or command.
	ErrProtocol = errors.New("zmtp: protocol error")
	// ErrFrameTooLarge reports a frame (or multi-part message) larger than
	// Options.MaxFrameSize. It is detected from the frame header, before any
	// memory is allocated for the body.
	ErrFrameTooLarge = errors.New("zmtp: frame too large")
	// ErrHandshakeTimeout reports a peer that did not complete the greeting
	// and READY exchange within Options.HandshakeTimeout.
	ErrHandshakeTimeout = errors.New("zmtp: handshake timed out")
	// ErrWriteTimeout reports a peer that did not drain its connection within
	// Options.WriteTimeout; the connection is dropped.
	ErrWriteTimeout = errors.New("zmtp: write timed out")
	// ErrDuplicateIdentity is the Err of the Disconnected event of a Router
	// connection that was replaced by a newer connection with the same
	// identity (the newest connection wins).
	ErrDuplicateIdentity = errors.New("zmtp: replaced by a newer connection with the same identity")
	// ErrPeerError reports an ERROR command sent by the peer.
	ErrPeerError = errors.New("zmtp: peer reported an error")
)
