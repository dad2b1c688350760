package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/worker/httpc"
)

// `cicada bench` over HTTPS (-H https://IP:PORT) and with a traffic mix
// (--mix). The TLS options are the scenario's `http: tls:` keys as flags
// (--tls-ca-file is ca_file, --tls-resume is session_resumption,
// --insecure is insecure), built by the one home of TLS settings,
// worker/httpc's TLSOptions.Build, so that bench and the users agree on
// names, defaults and errors. The connection speaks HTTP/1.1 (ALPN
// http/1.1) whatever is offered.

// benchTLSOptions are the TLS and mix flags.
type benchTLSOptions struct {
	insecure, resume       bool
	caFile, cert, key, sni string
	minVersion, maxVersion string
	ciphers, curves        []string
	mix                    string
}

// benchTLSFlags are the flags that need -H https://.
var benchTLSFlags = []string{"insecure", "tls-resume", "tls-ca-file", "tls-cert-file", "tls-key-file", "tls-server-name", "tls-min-version", "tls-max-version",
	"tls-cipher-suites", "tls-curves"}

func (o *benchTLSOptions) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.insecure, "insecure", false, "HTTPS: do not verify the target's certificate (the scenario's insecure)")
	fs.BoolVar(&o.resume, "tls-resume", false, "HTTPS: resume TLS sessions (tickets cached); default: a full handshake on every new connection")
	fs.StringVar(&o.caFile, "tls-ca-file", "", "HTTPS: trust these PEM CAs instead of the system's")
	fs.StringVar(&o.cert, "tls-cert-file", "", "HTTPS: client certificate (PEM), sent when the target asks")
	fs.StringVar(&o.key, "tls-key-file", "", "HTTPS: the client certificate's key (PEM)")
	fs.StringVar(&o.sni, "tls-server-name", "", "HTTPS: the name sent in SNI and checked in the certificate (default: the IP address)")
	fs.StringVar(&o.minVersion, "tls-min-version", "", "HTTPS: the lowest TLS version offered: 1.0, 1.1, 1.2 or 1.3 (default 1.2)")
	fs.StringVar(&o.maxVersion, "tls-max-version", "", "HTTPS: the highest TLS version offered (default 1.3)")
	fs.StringSliceVar(&o.ciphers, "tls-cipher-suites", nil, "HTTPS: TLS 1.0-1.2 cipher suites offered, IANA names, comma-separated (default: Go's)")
	fs.StringSliceVar(&o.curves, "tls-curves", nil, "HTTPS: key exchange groups offered, in order: X25519, P-256, X25519MLKEM768... (default: Go's)")
	fs.StringVar(&o.mix, "mix", "", "tps, throughput: a traffic mix of /bytes/N objects, SIZE:WEIGHT,... (e.g. 1KiB:50,16KiB:30,512KiB:20)")
}

// benchScheme reads -H's scheme: https is turned into http (and port 443
// by default) for benchTarget's checks.
func benchScheme(h string) (string, bool) {
	u, err := url.Parse(h)
	if err != nil || u.Scheme != "https" {
		return h, false
	}
	if u.Port() == "" && u.Host != "" {
		u.Host += ":443"
	}
	u.Scheme = "http"
	return u.String(), true
}

// tlsConfig builds the client configuration of -H https://IP:PORT, with
// host the IP address (the default server name).
func (o *benchTLSOptions) tlsConfig(host string) (*tls.Config, error) {
	to := httpc.TLSOptions{CAFile: o.caFile, CertFile: o.cert, KeyFile: o.key, ServerName: o.sni, SessionResumption: o.resume}
	var err error
	if o.minVersion != "" {
		if to.MinVersion, err = httpc.ParseTLSVersion(o.minVersion); err != nil {
			return nil, fmt.Errorf("--tls-min-version: %w", err)
		}
	}
	if o.maxVersion != "" {
		if to.MaxVersion, err = httpc.ParseTLSVersion(o.maxVersion); err != nil {
			return nil, fmt.Errorf("--tls-max-version: %w", err)
		}
	}
	for _, n := range o.ciphers {
		id, err := httpc.ParseCipherSuite(strings.TrimSpace(n))
		if err != nil {
			return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
		}
		to.CipherSuites = append(to.CipherSuites, id)
	}
	for _, n := range o.curves {
		id, err := httpc.ParseCurve(strings.TrimSpace(n))
		if err != nil {
			return nil, fmt.Errorf("--tls-curves: %w", err)
		}
		to.Curves = append(to.Curves, id)
	}
	if len(to.CipherSuites) > 0 && to.MinVersion == tls.VersionTLS13 {
		return nil, errors.New("--tls-cipher-suites name TLS 1.0-1.2 suites, which --tls-min-version 1.3 never negotiates")
	}
	c, err := to.Build(nil, false)
	if err != nil {
		return nil, flagNames(err)
	}
	if c.ServerName == "" {
		h, _, _ := strings.Cut(host, ":")
		c.ServerName = h
	}
	c.InsecureSkipVerify = o.insecure //nolint:gosec // --insecure asked for it
	return c, nil
}

// flagNames names the flags in httpc's TLS errors (which name the
// TLSOptions fields).
func flagNames(err error) error {
	msg := err.Error()
	for _, f := range [][2]string{{"TLS.CAFile", "--tls-ca-file"}, {"TLS.CertFile", "--tls-cert-file"}, {"TLS.KeyFile", "--tls-key-file"},
		{"TLS.MinVersion", "--tls-min-version"}, {"TLS.MaxVersion", "--tls-max-version"}, {"TLS.CipherSuites", "--tls-cipher-suites"}, {"TLS.Curves", "--tls-curves"}} {
		msg = strings.ReplaceAll(msg, f[0], f[1])
	}
	return fmt.Errorf("%w (%s)", httpc.ErrInvalidTLS, strings.TrimPrefix(msg, httpc.ErrInvalidTLS.Error()+": "))
}

// tlsParams are the report's TLS parameters (RFC 9411 section 6.3: the
// TLS version, cipher suites, key exchange and resumption policy stated).
func (o *benchTLSOptions) tlsParams(c *tls.Config) []capacity.Param {
	versions := "1.2-1.3 (Go's default)"
	if c.MinVersion != 0 || c.MaxVersion != 0 {
		lo, hi := httpc.TLSVersionName(c.MinVersion), httpc.TLSVersionName(c.MaxVersion)
		if lo == "" {
			lo = "1.2"
		}
		if hi == "" {
			hi = "1.3"
		}
		versions = lo + "-" + hi
	}
	ciphers := "Go's default (TLS 1.3: AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305)"
	if len(c.CipherSuites) > 0 {
		names := make([]string, len(c.CipherSuites))
		for i, id := range c.CipherSuites {
			names[i] = tls.CipherSuiteName(id)
		}
		ciphers = strings.Join(names, ", ") + " (TLS 1.3's fixed)"
	}
	groups := "Go's default (X25519MLKEM768, X25519, P-256, P-384...)"
	if len(c.CurvePreferences) > 0 {
		names := make([]string, len(c.CurvePreferences))
		for i, id := range c.CurvePreferences {
			names[i] = httpc.CurveName(id)
		}
		groups = strings.Join(names, ", ")
	}
	resume := "off: a full handshake on every new connection"
	if c.ClientSessionCache != nil {
		resume = "on (--tls-resume): sessions the target tickets are resumed"
	}
	verify := "system CAs, name " + c.ServerName
	switch {
	case c.InsecureSkipVerify:
		verify = "off (--insecure)"
	case o.caFile != "":
		verify = o.caFile + ", name " + c.ServerName
	}
	return []capacity.Param{{Name: "tls versions", Value: versions}, {Name: "tls cipher suites", Value: ciphers}, {Name: "tls key exchange", Value: groups},
		{Name: "tls resumption", Value: resume}, {Name: "tls verification", Value: verify}, {Name: "tls alpn", Value: "http/1.1"}}
}

// mixParam is the report's mix parameter.
func mixParam(m probe.Mix) capacity.Param {
	parts := make([]string, len(m))
	tw := m.TotalWeight()
	for i, e := range m {
		parts[i] = fmt.Sprintf("%d B x %d (%.3g%%)", e.Size, e.Weight, 100*float64(e.Weight)/float64(tw))
	}
	return capacity.Param{Name: "mix", Value: strings.Join(parts, ", ") + "; mean " + strconv.FormatFloat(m.MeanSize(), 'f', 0, 64) + " B, /bytes/N, sizes drawn per arrival"}
}

// benchVariants checks the HTTPS and mix options against the test and
// returns the TLS configuration (nil over http), the mix (nil without)
// and their report parameters.
func benchVariants(fs *pflag.FlagSet, o *benchTLSOptions, https bool, host, test string) (*tls.Config, probe.Mix, []capacity.Param, error) {
	var params []capacity.Param
	var mix probe.Mix
	if fs.Changed("mix") {
		switch {
		case test != "tps" && test != "throughput":
			return nil, nil, nil, fmt.Errorf("--mix is for tps and throughput, not %s", test)
		case fs.Changed("path") || fs.Changed("object-size"):
			return nil, nil, nil, errors.New("--mix fetches /bytes/N of its sizes: not with --path or --object-size")
		case fs.Changed("dataplane"):
			return nil, nil, nil, errors.New("--mix runs on kernel sockets, not with --dataplane")
		}
		var err error
		if mix, err = probe.ParseMix(o.mix); err != nil {
			return nil, nil, nil, fmt.Errorf("--mix: %w", err)
		}
		params = append(params, mixParam(mix))
	}
	if !https {
		for _, name := range benchTLSFlags {
			if fs.Changed(name) {
				return nil, nil, nil, fmt.Errorf("--%s needs -H https://IP:PORT", name)
			}
		}
		return nil, mix, params, nil
	}
	switch {
	case fs.Changed("dataplane"):
		return nil, nil, nil, errors.New("-H https:// runs on kernel sockets: the data plane speaks plain HTTP")
	case test == "teardown":
		return nil, nil, nil, errors.New("-H https:// is for concurrent, cps, tps, throughput and latency: teardown's FIN-then-wait close is a TCP measurement")
	}
	c, err := o.tlsConfig(host)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, mix, append(params, o.tlsParams(c)...), nil
}

// benchVariantTitle adapts a test's title and RFC sections to HTTPS and a
// mix (RFC 9411's numbering: 7.1 the traffic mix, 7.6 HTTPS connections
// per second, 7.7 HTTPS throughput, 7.8 HTTPS latency, 7.9 concurrent
// HTTPS connections; the transaction rate is RFC 3511's 5.7 either way).
func benchVariantTitle(test probe.Test, https, mix bool) (title, rfc string) {
	title, rfc = test.Title, test.RFC
	if https {
		switch test.Name {
		case "cps":
			title, rfc = "Maximum TCP/HTTPS connection establishment rate", "RFC 9411 7.6"
		case "concurrent":
			title, rfc = "Concurrent TCP/HTTPS connection capacity", "RFC 9411 7.9"
		case "throughput":
			title, rfc = "HTTPS throughput", "RFC 9411 7.7"
		case "tps":
			title, rfc = "Maximum HTTPS transaction rate", "RFC 3511 5.7 over TLS"
		case "latency":
			title, rfc = "HTTPS transaction latency", "RFC 9411 7.8"
		}
	}
	if mix {
		title += " with a traffic mix"
		if test.Name == "throughput" {
			rfc += ", RFC 9411 7.1"
		}
	}
	return title, rfc
}

// benchVariantParams appends the variants' parameters to the report's;
// with a mix, the single object size is not a parameter and the target's
// path is /bytes/N.
func benchVariantParams(ps, variant []capacity.Param, mix bool) []capacity.Param {
	if !mix {
		return append(ps, variant...)
	}
	out := make([]capacity.Param, 0, len(ps)+len(variant))
	for _, p := range ps {
		switch p.Name {
		case "object size":
			continue
		case "target":
			if u, err := url.Parse(p.Value); err == nil {
				u.Path = "/bytes/N"
				p.Value = u.String()
			}
		}
		out = append(out, p)
	}
	return append(out, variant...)
}
