package master

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrHostScheme means a target host without a scheme and host name, such
// as "127.0.0.1:8080": every request of such a test would fail, so the
// master refuses it before starting (Locust 2.12.1 starts it and fails
// every request with MissingSchema or InvalidSchema).
var ErrHostScheme = errors.New("master: host has no scheme")

// CheckHost reports whether host can be a test's target host: empty (the
// user classes' own hosts are used) or an absolute URL with a scheme and a
// host name ("http://127.0.0.1:8080", "https://example.com/base"). Other
// schemes than http and https are accepted, for Python workers' custom
// users. The error says to add http://.
func CheckHost(host string) error {
	if host == "" {
		return nil
	}
	u, err := url.Parse(host)
	if err == nil && u.Scheme != "" && u.Host != "" {
		return nil
	}
	if i := strings.Index(host, "://"); i > 0 {
		return fmt.Errorf("%w: %q names no host after %s://", ErrHostScheme, host, host[:i])
	}
	return fmt.Errorf("%w: %q: add http:// (or https://), as in http://%s", ErrHostScheme, host, strings.TrimPrefix(host, "//"))
}
