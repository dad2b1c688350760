package scenario

import (
	"crypto/tls"
	"errors"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cicada-load/cicada/worker/httpc"
)

// TLS and HTTP/2 options of the `http:` block (issue 16):
//
//	http:
//	  http2: true          # h2 over TLS (ALPN), h2c prior knowledge over http://
//	  streams: 10          # concurrent streams per user (default 100); needs http2
//	  tls:
//	    ca_file: ca.pem    # trust these CAs instead of the system's
//	    cert_file: client.pem
//	    key_file: client.key
//	    server_name: gw.example   # SNI and the name checked in the certificate
//	    min_version: "1.2"        # 1.0 1.1 1.2 1.3 (or TLSv1.2)
//	    max_version: "1.3"
//	    cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]   # TLS 1.0-1.2 only
//	    curves: [X25519, P-256]   # key exchange groups (default: Go's, with X25519MLKEM768)
//	    session_resumption: false # off (default): a full handshake per connection
//	    alpn: [http/1.1]          # default http/1.1, or h2 with http2
//
// Relative file names are relative to the scenario file's directory. The
// files are read when the scenario is loaded, so a missing file or a bad
// PEM is an error of the file, line and field.
//
// A task may set `parallel: true` beside its `requests:`: its requests then
// go out at once, as streams of the user's HTTP/2 connection (at most
// `streams` at a time). It needs `http2: true`.

// tlsGoFields maps TLSOptions' field names, as httpc's errors name them,
// to the scenario's keys.
var tlsGoFields = []struct{ goName, key string }{
	{"TLS.CAFile", "ca_file"},
	{"TLS.CertFile", "cert_file"},
	{"TLS.KeyFile", "key_file"},
	{"TLS.MinVersion", "min_version"},
	{"TLS.MaxVersion", "max_version"},
	{"TLS.CipherSuites", "cipher_suites"},
	{"TLS.ALPN", "alpn"},
	{"TLS.Curves", "curves"},
}

// tlsBlock is a parsed `tls:` mapping with the nodes of its keys, for
// errors found when the options are checked as a whole.
type tlsBlock struct {
	node  *yaml.Node
	path  string
	nodes map[string]*yaml.Node
}

func (p *parser) tlsOptions(n *yaml.Node, path string, o *httpc.TLSOptions) (*tlsBlock, error) {
	b := &tlsBlock{node: n, path: path, nodes: map[string]*yaml.Node{}}
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		b.nodes[key] = v
		var err error
		switch key {
		case "ca_file":
			o.CAFile, err = p.fileName(v, field)
		case "cert_file":
			o.CertFile, err = p.fileName(v, field)
		case "key_file":
			o.KeyFile, err = p.fileName(v, field)
		case "server_name":
			o.ServerName, err = p.str(v, field)
		case "min_version":
			o.MinVersion, err = p.tlsVersion(v, field)
		case "max_version":
			o.MaxVersion, err = p.tlsVersion(v, field)
		case "cipher_suites":
			var names []string
			names, err = p.strOrList(v, field)
			for _, name := range names {
				if err != nil {
					break
				}
				var id uint16
				id, err = httpc.ParseCipherSuite(strings.TrimSpace(name))
				if err != nil {
					err = p.errf(v, field, "%s", strings.TrimPrefix(err.Error(), httpc.ErrInvalidTLS.Error()+": "))
				}
				o.CipherSuites = append(o.CipherSuites, id)
			}
		case "curves":
			var names []string
			names, err = p.strOrList(v, field)
			for _, name := range names {
				if err != nil {
					break
				}
				var id tls.CurveID
				id, err = httpc.ParseCurve(strings.TrimSpace(name))
				if err != nil {
					err = p.errf(v, field, "%s", strings.TrimPrefix(err.Error(), httpc.ErrInvalidTLS.Error()+": "))
				}
				o.Curves = append(o.Curves, id)
			}
		case "session_resumption":
			o.SessionResumption, err = p.bool_(v, field)
		case "alpn":
			o.ALPN, err = p.strOrList(v, field)
		default:
			return errUnknown
		}
		return err
	})
	return b, err
}

// fileName reads a file name, relative to the scenario file's directory.
func (p *parser) fileName(n *yaml.Node, field string) (string, error) {
	s, err := p.str(n, field)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", p.errf(n, field, "must not be empty")
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(p.file), s)
	}
	return s, nil
}

func (p *parser) tlsVersion(n *yaml.Node, field string) (uint16, error) {
	s, err := p.str(n, field)
	if err != nil {
		return 0, err
	}
	v, err := httpc.ParseTLSVersion(strings.TrimSpace(s))
	if err != nil {
		return 0, p.errf(n, field, "%s", strings.TrimPrefix(err.Error(), httpc.ErrInvalidTLS.Error()+": "))
	}
	return v, nil
}

// checkProtocols checks the TLS and HTTP/2 options as a whole (reading
// the files) and names the field of the first problem.
func (p *parser) checkProtocols(httpNode *yaml.Node, o *httpc.Options, b *tlsBlock) error {
	if o.HTTP2Streams > 0 && !o.HTTP2 {
		return p.errf(httpNode, "http.streams", "needs http2: true")
	}
	if b == nil && !o.HTTP2 {
		return nil
	}
	_, err := o.TLS.Build(nil, o.HTTP2)
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), httpc.ErrInvalidTLS.Error()+": ")
	if b == nil {
		return p.errf(httpNode, "http", "%s", msg)
	}
	// The field the message names first is the one at fault.
	at, key := -1, ""
	for _, f := range tlsGoFields {
		if i := strings.Index(msg, f.goName); i >= 0 && (at < 0 || i < at) {
			at, key = i, f.key
		}
	}
	if key == "" {
		return p.errf(b.node, b.path, "%s", msg)
	}
	node := b.nodes[key]
	if node == nil {
		node = b.node
	}
	return p.errf(node, b.path+"."+key, "%s", msg)
}

// errParallel is the refusal of a parallel task without HTTP/2.
var errParallel = errors.New("parallel: true needs http2: true in the http block (an HTTP/1.1 user has one request in flight)")

// parallelAt is where a task said parallel: true.
type parallelAt struct {
	n     *yaml.Node
	field string
}
