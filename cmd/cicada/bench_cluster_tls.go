package main

import (
	"crypto/tls"

	"github.com/cicada-load/cicada/capacity/cluster"
)

// HTTPS across a cluster: the controller sends its TLS flag values as
// given (cluster.TLSOptions), and every worker builds its tls.Config from
// them with benchTLSOptions.tlsConfig, the standalone bench's one function,
// so names, defaults and errors agree; the CA, certificate and key files
// are read on the worker (an error names the flag and the file, and the
// controller exits 2 with it).

// clusterTLS is o as a trial spec's TLS options.
func (o *benchTLSOptions) clusterTLS() *cluster.TLSOptions {
	return &cluster.TLSOptions{Insecure: o.insecure, Resume: o.resume, CAFile: o.caFile, CertFile: o.cert, KeyFile: o.key, ServerName: o.sni,
		MinVersion: o.minVersion, MaxVersion: o.maxVersion, CipherSuites: o.ciphers, Curves: o.curves}
}

// benchClusterTLSConfig is a worker's tls.Config of a trial's TLS options
// for the target addr (IP:port), built as the standalone bench builds it.
func benchClusterTLSConfig(t cluster.TLSOptions, addr string) (*tls.Config, error) {
	o := benchTLSOptions{insecure: t.Insecure, resume: t.Resume, caFile: t.CAFile, cert: t.CertFile, key: t.KeyFile, sni: t.ServerName,
		minVersion: t.MinVersion, maxVersion: t.MaxVersion, ciphers: t.CipherSuites, curves: t.Curves}
	return o.tlsConfig(addr)
}
