package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/target"
)

// targetTLS are `cicada target`'s TLS options: a certificate from files,
// or a self-signed one made at start-up (its fingerprint printed) so that
// a test needs no files.
type targetTLS struct {
	cert, key  string
	selfSigned bool
}

func (o *targetTLS) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.cert, "tls-cert", "", "Serve HTTPS with this PEM certificate (chain); needs --tls-key")
	fs.StringVar(&o.key, "tls-key", "", "The PEM private key of --tls-cert")
	fs.BoolVar(&o.selfSigned, "tls-self-signed", false, "Serve HTTPS with a new self-signed ECDSA P-256 certificate for the --listen address, 127.0.0.1 and localhost (fingerprint printed)")
}

func (o *targetTLS) set() bool { return o.cert != "" || o.key != "" || o.selfSigned }

// config returns the server's TLS configuration (nil without TLS options)
// and prints the certificate's fingerprint.
func (o *targetTLS) config(listen string, stderr io.Writer) (*tls.Config, error) {
	if !o.set() {
		return nil, nil
	}
	var (
		c   tls.Certificate
		err error
	)
	what := "certificate " + o.cert
	switch {
	case o.selfSigned && (o.cert != "" || o.key != ""):
		return nil, fmt.Errorf("%w: --tls-self-signed or --tls-cert/--tls-key, not both", target.ErrTLS)
	case o.selfSigned:
		hosts := selfSignedHosts(listen)
		c, err = target.SelfSigned(hosts...)
		what = "self-signed certificate for " + strings.Join(hosts, ", ")
	default:
		c, err = target.LoadTLS(o.cert, o.key)
	}
	if err != nil {
		return nil, err //nolint:wrapcheck // target's errors name the files
	}
	fmt.Fprintf(stderr, "cicada target TLS: %s, SHA-256 fingerprint %s\n", what, target.Fingerprint(c))
	return target.ServerTLS(c), nil
}

// selfSignedHosts are the listen address's host (when it names one) and
// the loopback names.
func selfSignedHosts(listen string) []string {
	var hosts []string
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		if a, err := netip.ParseAddr(h); err != nil || !a.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	for _, h := range []string{"127.0.0.1", "::1", "localhost"} {
		if len(hosts) == 0 || hosts[0] != h {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
