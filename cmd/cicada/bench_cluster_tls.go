package main

import (
	"crypto/tls"
	"strings"

	"github.com/cicada-load/cicada/capacity"

	"github.com/cicada-load/cicada/capacity/cluster"
)

// HTTPS across a cluster: the controller sends its TLS flag values as
// given (cluster.TLSOptions), and every worker builds its tls.Config from
// them with benchTLSOptions.tlsConfig, the standalone bench's one function,
// so names, defaults and errors agree; the CA, certificate and key files
// are read on the workers only (an error names the flag and the file, and
// the controller exits 2 with it); the controller checks the other flags.

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

// controller is the TLS options the controller itself checks: with
// --master, o without its files (the workers read them, each its own
// copy, and name a missing one); standalone, o.
func (o *benchTLSOptions) controller(master bool) *benchTLSOptions {
	if !master {
		return o
	}
	c := *o
	c.caFile, c.cert, c.key = "", "", ""
	return &c
}

// clusterParams states in the report's TLS parameters the files the
// workers read (with --master; standalone, ps as they are).
func (o *benchTLSOptions) clusterParams(ps []capacity.Param, master bool) []capacity.Param {
	if !master {
		return ps
	}
	for i, p := range ps {
		if p.Name == "tls verification" && o.caFile != "" && !o.insecure {
			ps[i].Value = o.caFile + " (on each worker)" + strings.TrimPrefix(p.Value, "system CAs")
		}
	}
	if o.cert != "" {
		ps = append(ps, capacity.Param{Name: "tls client certificate", Value: o.cert + ", key " + o.key + " (on each worker)"})
	}
	return ps
}
