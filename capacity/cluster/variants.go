package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
)

// HTTPS and traffic mixes across a cluster (version 2 of the exchange).
//
// A trial spec carries the controller's TLS options as given on its
// command line (TLSOptions: `cicada bench`'s flag values, not a built
// tls.Config) and the mix (probe.Mix, as its String). Each worker builds
// its own tls.Config from them with AgentOptions.TLS, the function the
// standalone bench uses, so that the names, defaults and errors are one;
// file paths (CA, certificate, key) are read on the worker and must exist
// there. A worker that cannot build the configuration (no AgentOptions.TLS,
// a file missing) answers an options error (Result.Options), which the
// controller returns as ErrWorkerOptions: the options cannot be honoured
// on that cluster, never a plain-TCP trial in their place.
//
// A result carries the trial's generator strain, its TLS handshakes and
// negotiated parameters and its mix counts; Merge merges them (MergeTLS,
// MergeMix).

// ErrWorkerOptions (an ErrWorker) is returned by Controller.Trial when a
// worker cannot honour the trial's options (Result.Options).
var ErrWorkerOptions = fmt.Errorf("%w: options a worker cannot honour", ErrWorker)

// Bounds of the variants' decoded fields.
const (
	// MaxTLSNames bounds --tls-cipher-suites and --tls-curves' names.
	MaxTLSNames = 64
	// MaxName bounds a negotiated version, cipher suite or group name.
	MaxName = 128
)

// Mixed names a negotiated TLS parameter the workers disagree on.
const Mixed = "mixed"

// TLSOptions are the HTTPS options of a trial: the TLS flags of `cicada
// bench` as given (the flag each field comes from in its comment).
type TLSOptions struct {
	Insecure   bool   // --insecure
	Resume     bool   // --tls-resume
	CAFile     string // --tls-ca-file
	CertFile   string // --tls-cert-file
	KeyFile    string // --tls-key-file
	ServerName string // --tls-server-name
	MinVersion string // --tls-min-version
	MaxVersion string // --tls-max-version
	// CipherSuites and Curves are --tls-cipher-suites and --tls-curves'
	// names (at most MaxTLSNames each).
	CipherSuites, Curves []string
}

func encodeTLSOptions(o *TLSOptions) map[string]any {
	return map[string]any{"insecure": o.Insecure, "resume": o.Resume, "ca_file": o.CAFile, "cert_file": o.CertFile, "key_file": o.KeyFile,
		"server_name": o.ServerName, "min_version": o.MinVersion, "max_version": o.MaxVersion,
		"cipher_suites": nonNil(o.CipherSuites), "curves": nonNil(o.Curves)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// encodeProbeVariants adds the TLS options and the mix to a trial's probe
// map (absent: plain HTTP, no mix).
func encodeProbeVariants(m map[string]any, p ProbeOptions) {
	if p.TLS != nil {
		m["tls"] = encodeTLSOptions(p.TLS)
	}
	if len(p.Mix) > 0 {
		m["mix"] = p.Mix.String()
	}
}

// decodeProbeVariants reads what encodeProbeVariants wrote.
func decodeProbeVariants(g *fields, p *ProbeOptions) {
	if g.err != nil {
		return
	}
	if v, ok := g.m["tls"]; ok && v != nil {
		t := newFields(TypeTrial+".probe.tls", v)
		o := &TLSOptions{Insecure: t.bool("insecure"), Resume: t.bool("resume"), CAFile: t.str("ca_file"), CertFile: t.str("cert_file"),
			KeyFile: t.str("key_file"), ServerName: t.str("server_name"), MinVersion: t.str("min_version"), MaxVersion: t.str("max_version"),
			CipherSuites: t.strs("cipher_suites"), Curves: t.strs("curves")}
		if t.err != nil {
			g.err = t.err
			return
		}
		p.TLS = o
	}
	if v, ok := g.m["mix"]; ok && v != nil {
		s := g.str("mix")
		if g.err != nil {
			return
		}
		m, err := probe.ParseMix(s)
		if err != nil {
			g.fail("mix", "%v", err)
			return
		}
		p.Mix = m
	}
}

// strs is a list of at most MaxTLSNames strings (MaxName bytes each).
func (f *fields) strs(key string) []string {
	if f.err != nil {
		return nil
	}
	l, ok := f.m[key].([]any)
	if ss, isStrs := f.m[key].([]string); isStrs { // an encoder's value, not yet on the wire
		l, ok = make([]any, len(ss)), true
		for i, s := range ss {
			l[i] = s
		}
	}
	switch {
	case !ok:
		f.fail(key, "%T is not a list", f.m[key])
		return nil
	case len(l) > MaxTLSNames:
		f.fail(key, "%d names, more than %d", len(l), MaxTLSNames)
		return nil
	case len(l) == 0:
		return nil
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, ok := v.(string)
		if !ok || len(s) > MaxName || !validText(s) {
			f.fail(key, "name %d is not a string of at most %d bytes", i+1, MaxName)
			return nil
		}
		out[i] = s
	}
	return out
}

// encodeTrialVariants adds a result's strain, TLS information and mix
// counts.
func encodeTrialVariants(m map[string]any, t capacity.Trial) {
	m["generator_strain"] = t.GeneratorStrain
	if t.TLS != nil {
		m["tls"] = map[string]any{"full": t.TLS.Full, "resumed": t.TLS.Resumed, "version": t.TLS.Version, "cipher": t.TLS.Cipher,
			"group": t.TLS.Group, "mixed": t.TLS.Mixed}
	}
	if len(t.Mix) > 0 {
		l := make([]any, len(t.Mix))
		for i, c := range t.Mix {
			l[i] = map[string]any{"size": c.Size, "count": c.Count, "failed": c.Failed, "bytes": c.Bytes}
		}
		m["mix"] = l
	}
}

// decodeTrialVariants reads what encodeTrialVariants wrote; a result
// without generator_strain is refused (a version 1 worker's).
func decodeTrialVariants(f *fields, t *capacity.Trial) {
	t.GeneratorStrain = f.str("generator_strain")
	if f.err != nil {
		return
	}
	if v, ok := f.m["tls"]; ok && v != nil {
		g := newFields(TypeResult+".tls", v)
		info := &capacity.TLSInfo{Full: g.int("full", false), Resumed: g.int("resumed", false), Version: g.name("version"),
			Cipher: g.name("cipher"), Group: g.name("group"), Mixed: g.bool("mixed")}
		if g.err != nil {
			f.err = g.err
			return
		}
		t.TLS = info
	}
	if v, ok := f.m["mix"]; ok && v != nil {
		l, ok := v.([]any)
		switch {
		case !ok:
			f.fail("mix", "%T is not a list", v)
			return
		case len(l) > probe.MaxMixEntries:
			f.fail("mix", "%d sizes, more than %d", len(l), probe.MaxMixEntries)
			return
		case len(l) == 0:
			return
		}
		t.Mix = make([]capacity.MixCount, len(l))
		for i, e := range l {
			g := newFields(fmt.Sprintf("%s.mix[%d]", TypeResult, i), e)
			c := capacity.MixCount{Size: g.int("size", false), Count: g.int("count", false), Failed: g.int("failed", false), Bytes: g.int("bytes", false)}
			switch {
			case g.err != nil:
				f.err = g.err
			case c.Size < 1 || c.Size > probe.MaxObjectSize:
				g.fail("size", "%d is not 1 to %d bytes", c.Size, probe.MaxObjectSize)
				f.err = g.err
			case slices.ContainsFunc(t.Mix[:i], func(d capacity.MixCount) bool { return d.Size == c.Size }):
				g.fail("size", "%d is listed twice", c.Size)
				f.err = g.err
			}
			if f.err != nil {
				t.Mix = nil
				return
			}
			t.Mix[i] = c
		}
	}
}

// name is a short string (MaxName bytes).
func (f *fields) name(key string) string {
	s := f.str(key)
	if f.err == nil && len(s) > MaxName {
		f.fail(key, "%d bytes, more than %d", len(s), MaxName)
		return ""
	}
	return s
}

// MergeTLS merges the workers' TLS information: the handshakes summed; a
// negotiated version, cipher suite or group the workers disagree on is
// Mixed ("mixed"), and so is the merged Mixed flag then (a worker's own
// Mixed carries over). Workers without a handshake (nil, or no parameters
// negotiated) name no parameter. nil when no worker ran over TLS.
func MergeTLS(infos []*capacity.TLSInfo) *capacity.TLSInfo {
	var out *capacity.TLSInfo
	pick := func(cur *string, v string) {
		switch {
		case v == "" || *cur == v:
		case *cur == "":
			*cur = v
		default:
			*cur = Mixed
			out.Mixed = true
		}
	}
	for _, t := range infos {
		if t == nil {
			continue
		}
		if out == nil {
			out = &capacity.TLSInfo{}
		}
		out.Full += t.Full
		out.Resumed += t.Resumed
		out.Mixed = out.Mixed || t.Mixed
		pick(&out.Version, t.Version)
		pick(&out.Cipher, t.Cipher)
		pick(&out.Group, t.Group)
	}
	return out
}

// MergeMix sums the workers' mix counts per object size, in the order the
// sizes first appear (every worker runs the same mix: its order).
func MergeMix(mixes [][]capacity.MixCount) []capacity.MixCount {
	var out []capacity.MixCount
	for _, m := range mixes {
		for _, c := range m {
			k := slices.IndexFunc(out, func(d capacity.MixCount) bool { return d.Size == c.Size })
			if k < 0 {
				out = append(out, capacity.MixCount{Size: c.Size})
				k = len(out) - 1
			}
			out[k].Count += c.Count
			out[k].Failed += c.Failed
			out[k].Bytes += c.Bytes
		}
	}
	return out
}

// validText: UTF-8 without control characters (names go into reports).
func validText(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd })
}
