package httpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ErrInvalidTLS is wrapped by NewConfig and TLSOptions.Build when a TLS
// option cannot be honoured: a file that cannot be read or holds no usable
// PEM, an unknown version or cipher suite, a minimum above the maximum.
// The message names the field (TLS.CAFile, TLS.MinVersion, ...).
var ErrInvalidTLS = errors.New("httpc: invalid TLS option")

// maxTLSFileSize bounds the CA bundle, certificate and key files read.
const maxTLSFileSize = 4 << 20

// TLSOptions are TLS settings as data, for scenario files and the Go API.
// They apply on top of Options.TLSConfig (a field set here wins). The
// zero value changes nothing.
type TLSOptions struct {
	// CAFile is a PEM bundle of the certificate authorities to trust,
	// instead of the system's.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate (chain) and its
	// private key, sent when the server asks for one. Both or neither.
	CertFile, KeyFile string
	// ServerName overrides the name sent in SNI and checked against the
	// server's certificate (default: the URL's host).
	ServerName string
	// MinVersion and MaxVersion bound the TLS version (tls.VersionTLS12,
	// ...); zero means crypto/tls's default (TLS 1.2 to 1.3).
	MinVersion, MaxVersion uint16
	// CipherSuites are the TLS 1.0-1.2 suites offered (tls.TLS_*); empty
	// means crypto/tls's default. TLS 1.3 suites cannot be chosen
	// (crypto/tls does not allow it), so naming one is refused.
	CipherSuites []uint16
	// Curves are the key exchange groups offered, in order of preference
	// (tls.X25519, tls.CurveP256, tls.X25519MLKEM768, ...); empty means
	// crypto/tls's default, which also sends a post-quantum X25519MLKEM768
	// key share. Against servers without it, [X25519] made a full
	// handshake 15-30 % cheaper for the generator (bench/tls).
	Curves []tls.CurveID
	// SessionResumption shares one client session cache among the Clients
	// of a Config, so a new connection resumes an earlier session (an
	// abbreviated handshake). Off (the default, like Python's ssl module
	// between connections) every new connection makes a full handshake:
	// what a test of handshakes per second wants.
	SessionResumption bool
	// ALPN is the list of protocols offered in ALPN. If empty: "http/1.1",
	// or "h2" with Options.HTTP2. Without HTTP2 it must not offer "h2"
	// (the Client speaks HTTP/1.1 only on such a connection).
	ALPN []string
}

// IsZero reports whether o sets nothing.
func (o *TLSOptions) IsZero() bool {
	return o.CAFile == "" && o.CertFile == "" && o.KeyFile == "" && o.ServerName == "" &&
		o.MinVersion == 0 && o.MaxVersion == 0 && len(o.CipherSuites) == 0 && !o.SessionResumption && len(o.ALPN) == 0 &&
		len(o.Curves) == 0
}

// Build returns base (nil: an empty configuration) cloned, with o applied.
// It reads the files, so errors about them show at load time; errors wrap
// ErrInvalidTLS and name the field. http2 says whether "h2" may be offered.
func (o *TLSOptions) Build(base *tls.Config, http2 bool) (*tls.Config, error) {
	var c *tls.Config
	if base != nil {
		c = base.Clone()
	} else {
		c = &tls.Config{}
	}
	if o.CAFile != "" {
		data, err := readTLSFile("TLS.CAFile", o.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%w: TLS.CAFile %s: no PEM certificate in the file", ErrInvalidTLS, o.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case o.CertFile != "" && o.KeyFile == "":
		return nil, fmt.Errorf("%w: TLS.KeyFile: missing (TLS.CertFile needs its key)", ErrInvalidTLS)
	case o.CertFile == "" && o.KeyFile != "":
		return nil, fmt.Errorf("%w: TLS.CertFile: missing (TLS.KeyFile needs its certificate)", ErrInvalidTLS)
	case o.CertFile != "":
		certPEM, err := readTLSFile("TLS.CertFile", o.CertFile)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readTLSFile("TLS.KeyFile", o.KeyFile)
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: TLS.CertFile %s and TLS.KeyFile %s: %w", ErrInvalidTLS, o.CertFile, o.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	if o.ServerName != "" {
		c.ServerName = o.ServerName
	}
	for _, v := range []struct {
		field string
		v     uint16
	}{{"TLS.MinVersion", o.MinVersion}, {"TLS.MaxVersion", o.MaxVersion}} {
		if v.v != 0 && TLSVersionName(v.v) == "" {
			return nil, fmt.Errorf("%w: %s: unknown version 0x%04x", ErrInvalidTLS, v.field, v.v)
		}
	}
	if o.MinVersion != 0 {
		c.MinVersion = o.MinVersion
	}
	if o.MaxVersion != 0 {
		c.MaxVersion = o.MaxVersion
	}
	if c.MinVersion != 0 && c.MaxVersion != 0 && c.MinVersion > c.MaxVersion {
		return nil, fmt.Errorf("%w: TLS.MinVersion %s is above TLS.MaxVersion %s", ErrInvalidTLS,
			TLSVersionName(c.MinVersion), TLSVersionName(c.MaxVersion))
	}
	if len(o.CipherSuites) > 0 {
		for _, id := range o.CipherSuites {
			if !configurableSuite(id) {
				return nil, fmt.Errorf("%w: TLS.CipherSuites: %s cannot be configured (TLS 1.3 suites are fixed; unknown ids are refused)",
					ErrInvalidTLS, tls.CipherSuiteName(id))
			}
		}
		c.CipherSuites = slices.Clone(o.CipherSuites)
	}
	if len(o.Curves) > 0 {
		for _, id := range o.Curves {
			if CurveName(id) == "" {
				return nil, fmt.Errorf("%w: TLS.Curves: unknown key exchange group %d", ErrInvalidTLS, id)
			}
		}
		c.CurvePreferences = slices.Clone(o.Curves)
	}
	if o.SessionResumption {
		c.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	} else {
		c.ClientSessionCache = nil
	}
	switch {
	case len(o.ALPN) > 0:
		for _, p := range o.ALPN {
			if p == "" || len(p) > 255 {
				return nil, fmt.Errorf("%w: TLS.ALPN: protocol names must be 1 to 255 bytes", ErrInvalidTLS)
			}
		}
		if !http2 && slices.Contains(o.ALPN, "h2") {
			return nil, fmt.Errorf("%w: TLS.ALPN offers h2 without HTTP2 (set http2: true, or offer http/1.1)", ErrInvalidTLS)
		}
		if http2 && !slices.Contains(o.ALPN, "h2") {
			return nil, fmt.Errorf("%w: TLS.ALPN must offer h2 with HTTP2", ErrInvalidTLS)
		}
		c.NextProtos = slices.Clone(o.ALPN)
	case http2:
		c.NextProtos = []string{"h2"}
	default:
		c.NextProtos = []string{"http/1.1"}
	}
	return c, nil
}

func readTLSFile(field, path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidTLS, field, err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxTLSFileSize {
		return nil, fmt.Errorf("%w: %s %s: not a regular file of at most %d bytes", ErrInvalidTLS, field, path, maxTLSFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidTLS, field, err)
	}
	return data, nil
}

// configurableSuite reports whether id is a TLS 1.0-1.2 suite crypto/tls
// implements (secure or not).
func configurableSuite(id uint16) bool {
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, s := range list {
			if s.ID == id {
				return !slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13})
			}
		}
	}
	return false
}

var tlsVersions = []struct {
	v     uint16
	names []string
}{
	{tls.VersionTLS10, []string{"1.0", "TLSv1", "TLSv1.0", "TLS1.0"}},
	{tls.VersionTLS11, []string{"1.1", "TLSv1.1", "TLS1.1"}},
	{tls.VersionTLS12, []string{"1.2", "TLSv1.2", "TLS1.2"}},
	{tls.VersionTLS13, []string{"1.3", "TLSv1.3", "TLS1.3"}},
}

// ParseTLSVersion reads a TLS version name: "1.2", "TLSv1.2" or "TLS1.2"
// (1.0 to 1.3; case-insensitive).
func ParseTLSVersion(s string) (uint16, error) {
	for _, tv := range tlsVersions {
		for _, n := range tv.names {
			if strings.EqualFold(s, n) {
				return tv.v, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: unknown TLS version %q (want 1.0, 1.1, 1.2 or 1.3)", ErrInvalidTLS, s)
}

// TLSVersionName is "1.2" for tls.VersionTLS12, "" for an unknown version.
func TLSVersionName(v uint16) string {
	for _, tv := range tlsVersions {
		if tv.v == v {
			return tv.names[0]
		}
	}
	return ""
}

// ParseCipherSuite reads a cipher suite by its IANA name as crypto/tls
// spells it (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256). TLS 1.3 suites and
// unknown names are refused.
func ParseCipherSuite(name string) (uint16, error) {
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, s := range list {
			if strings.EqualFold(s.Name, name) {
				if !configurableSuite(s.ID) {
					return 0, fmt.Errorf("%w: cipher suite %s is TLS 1.3 only: crypto/tls does not let them be chosen", ErrInvalidTLS, s.Name)
				}
				return s.ID, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: unknown cipher suite %q (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", ErrInvalidTLS, name)
}

// curves are the key exchange groups crypto/tls implements, with the
// names ParseCurve accepts (the first is CurveName's).
var curves = []struct {
	id    tls.CurveID
	names []string
}{
	{tls.X25519, []string{"X25519"}},
	{tls.CurveP256, []string{"P-256", "P256", "secp256r1", "prime256v1", "CurveP256"}},
	{tls.CurveP384, []string{"P-384", "P384", "secp384r1", "CurveP384"}},
	{tls.CurveP521, []string{"P-521", "P521", "secp521r1", "CurveP521"}},
	{tls.X25519MLKEM768, []string{"X25519MLKEM768"}},
	{tls.SecP256r1MLKEM768, []string{"SecP256r1MLKEM768"}},
	{tls.SecP384r1MLKEM1024, []string{"SecP384r1MLKEM1024"}},
}

// ParseCurve reads a key exchange group name: X25519, P-256 (or P256,
// secp256r1, prime256v1), P-384, P-521, X25519MLKEM768, SecP256r1MLKEM768,
// SecP384r1MLKEM1024 (case-insensitive).
func ParseCurve(name string) (tls.CurveID, error) {
	for _, c := range curves {
		for _, n := range c.names {
			if strings.EqualFold(name, n) {
				return c.id, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: unknown key exchange group %q (X25519, P-256, P-384, P-521, X25519MLKEM768, ...)", ErrInvalidTLS, name)
}

// CurveName is "P-256" for tls.CurveP256, "" for a group crypto/tls does
// not implement.
func CurveName(id tls.CurveID) string {
	for _, c := range curves {
		if c.id == id {
			return c.names[0]
		}
	}
	return ""
}
