package testpeer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// TestCA is a throw-away certificate authority for TLS tests: certificates
// and keys are made in memory (ECDSA P-256) and written, when asked, into
// a directory the caller owns. Nothing here is fit for anything but tests.
type TestCA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate, PEM
	Pool *x509.CertPool
}

// CertSpec describes one certificate a TestCA issues.
type CertSpec struct {
	Names     []string  // DNS names and IP addresses (SANs); default "localhost", "127.0.0.1"
	NotBefore time.Time // default an hour ago
	NotAfter  time.Time // default a day from now
	Client    bool      // a client certificate (ExtKeyUsageClientAuth) instead of a server one
}

// Issued is a certificate with its key, as PEM and as a tls.Certificate.
type Issued struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// NewTestCA makes a new CA.
func NewTestCA() (*TestCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testpeer: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cicada test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testpeer: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("testpeer: CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &TestCA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Pool: pool}, nil
}

// MustTestCA is NewTestCA failing t on error.
func MustTestCA(t T) *TestCA {
	t.Helper()
	ca, err := NewTestCA()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return ca
}

var serial atomic.Int64

// Issue signs a new certificate for spec.
func (ca *TestCA) Issue(spec CertSpec) (*Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testpeer: key: %w", err)
	}
	names := spec.Names
	if len(names) == 0 {
		names = []string{"localhost", "127.0.0.1"}
	}
	nb, na := spec.NotBefore, spec.NotAfter
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour)
	}
	if na.IsZero() {
		na = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1) + 1),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    nb,
		NotAfter:     na,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if spec.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("testpeer: certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("testpeer: key: %w", err)
	}
	is := &Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}
	is.TLS, err = tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("testpeer: key pair: %w", err)
	}
	return is, nil
}

// MustIssue is Issue failing t on error.
func (ca *TestCA) MustIssue(t T, spec CertSpec) *Issued {
	t.Helper()
	is, err := ca.Issue(spec)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return is
}

// WriteFiles writes the certificate and key as dir/name.crt and
// dir/name.key (mode 0600) and returns their paths.
func (is *Issued) WriteFiles(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, is.CertPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("testpeer: %w", err)
	}
	if err := os.WriteFile(keyFile, is.KeyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("testpeer: %w", err)
	}
	return certFile, keyFile, nil
}

// WriteCA writes the CA certificate as dir/ca.crt and returns its path.
func (ca *TestCA) WriteCA(dir string) (string, error) {
	p := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(p, ca.PEM, 0o600); err != nil {
		return "", fmt.Errorf("testpeer: %w", err)
	}
	return p, nil
}
