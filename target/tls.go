package target

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// TLS (Options.TLS): the same routes over HTTPS (HTTP/1.1, ALPN
// "http/1.1"). The listener hands fasthttp tls.Conns whose handshake runs
// on the connection's own goroutine at its first read, so a slow or
// failed handshake holds up no other connection; a failed handshake
// closes the connection without a request. Session resumption is
// crypto/tls's default: the server issues session tickets (TLS 1.2 and
// 1.3), so a client that caches them resumes, one that does not makes a
// full handshake on every connection.
//
// SelfSigned makes a throw-away certificate at start-up (`cicada target
// --tls-self-signed`) so that a test needs no files; its Fingerprint is
// logged for a client that wants to check what it talks to.

// ErrTLS is wrapped by New and SelfSigned for TLS settings that cannot be
// served.
var ErrTLS = errors.New("target: invalid TLS setting")

// SelfSignedValidity is how long a SelfSigned certificate is valid (from
// an hour before it was made, for clocks slightly behind).
const SelfSignedValidity = 7 * 24 * time.Hour

// SelfSigned returns a new ECDSA P-256 self-signed certificate for hosts
// (IP addresses go into its IP SANs, names into its DNS SANs; at least
// one). Its key lives in memory only.
func SelfSigned(hosts ...string) (tls.Certificate, error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, fmt.Errorf("%w: a self-signed certificate needs at least one host", ErrTLS)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("target: self-signed key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("target: self-signed serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "cicada target " + hosts[0], Organization: []string{"cicada (self-signed)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(SelfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // its own root: a client may trust it as a CA file
	}
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, " \r\n") {
			return tls.Certificate{}, fmt.Errorf("%w: self-signed host %q is empty or holds a space", ErrTLS, h)
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("target: self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("target: self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Fingerprint is the SHA-256 fingerprint of c's leaf certificate, as
// openssl x509 -fingerprint -sha256 prints it (upper-case hex pairs joined
// by colons); "" when c holds no certificate.
func Fingerprint(c tls.Certificate) string {
	if len(c.Certificate) == 0 {
		return ""
	}
	sum := sha256.Sum256(c.Certificate[0])
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// ServerTLS returns the server configuration of certificate c: TLS 1.2
// and 1.3, ALPN http/1.1 (the target speaks HTTP/1.1 over TLS), crypto/tls's
// cipher suites, groups and session tickets.
func ServerTLS(c tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

// LoadTLS reads a PEM certificate (chain) and its key for ServerTLS.
func LoadTLS(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fmt.Errorf("%w: the certificate and the key go together (--tls-cert and --tls-key)", ErrTLS)
	}
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: certificate %s, key %s: %w", ErrTLS, certFile, keyFile, err)
	}
	return c, nil
}
