package zmtp

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseEndpoint turns a ZeroMQ TCP endpoint into a Go "host:port" address.
// For bind, host "*" means every interface (dual-stack) and port "*" or "0"
// an ephemeral port; for connect both must be concrete.
func parseEndpoint(endpoint string, bind bool) (string, error) {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", fmt.Errorf("%w %q: only tcp://host:port is supported", ErrEndpoint, endpoint)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrEndpoint, endpoint, err)
	}
	if host == "" {
		return "", fmt.Errorf("%w %q: missing host (use * to bind every interface)", ErrEndpoint, endpoint)
	}
	if strings.ContainsAny(host, " /?#@") {
		return "", fmt.Errorf("%w %q: bad host %q", ErrEndpoint, endpoint, host)
	}
	if host == "*" {
		if !bind {
			return "", fmt.Errorf("%w %q: cannot connect to host *", ErrEndpoint, endpoint)
		}
		host = ""
	}
	if port == "*" && bind {
		port = "0"
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", fmt.Errorf("%w %q: bad port %q", ErrEndpoint, endpoint, port)
	}
	if n == 0 && !bind {
		return "", fmt.Errorf("%w %q: cannot connect to port 0", ErrEndpoint, endpoint)
	}
	return net.JoinHostPort(host, strconv.FormatUint(n, 10)), nil
}

// validIdentity checks a user-chosen identity: empty (anonymous), or 1-255
// bytes of UTF-8 not starting with 0x00 (reserved for generated ids).
func validIdentity(id string) error {
	switch {
	case id == "":
		return nil
	case len(id) > 255:
		return fmt.Errorf("%w: %d bytes, at most 255", ErrInvalidIdentity, len(id))
	case id[0] == 0:
		return fmt.Errorf("%w: starts with 0x00, which is reserved for generated identities", ErrInvalidIdentity)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidIdentity)
	}
	return nil
}
