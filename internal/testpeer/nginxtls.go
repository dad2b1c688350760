package testpeer

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NginxTLS makes the test nginx serve https: the certificate and key
// files (PEM, absolute paths; TestCA makes them), the TLS versions, and
// HTTP/2 over ALPN. nginx's own defaults otherwise: session tickets on,
// so a client that keeps its session resumes it.
type NginxTLS struct {
	CertFile, KeyFile string
	Protocols         string // ssl_protocols; default "TLSv1.2 TLSv1.3"
	HTTP2             bool   // listen ... http2 (h2 offered in ALPN)
	// ClientCAFile, if set, makes nginx require a client certificate
	// signed by these CAs (ssl_verify_client on).
	ClientCAFile string
}

// TLSLine is one access log line of an https nginx.
type TLSLine struct {
	Status, Method, Path string
	Reused               bool   // $ssl_session_reused: the connection resumed a session
	Protocol             string // $server_protocol: HTTP/1.1, HTTP/2.0
	TLSVersion           string // $ssl_protocol: TLSv1.3, ...
}

func (t *NginxTLS) check() error {
	if t == nil {
		return nil
	}
	for _, f := range []string{t.CertFile, t.KeyFile, t.ClientCAFile} {
		if f != "" && (!filepath.IsAbs(f) || strings.ContainsAny(f, " ;{}\"'")) {
			return fmt.Errorf("testpeer: nginx TLS file %q: want a plain absolute path", f)
		}
	}
	if t.CertFile == "" || t.KeyFile == "" {
		return errors.New("testpeer: nginx TLS needs CertFile and KeyFile")
	}
	if strings.ContainsAny(t.Protocols, ";{}\"'") {
		return fmt.Errorf("testpeer: nginx TLS protocols %q", t.Protocols)
	}
	return nil
}

func (t *NginxTLS) listenFlags() string {
	switch {
	case t == nil:
		return ""
	case t.HTTP2:
		return " ssl http2"
	}
	return " ssl"
}

func (t *NginxTLS) directives() string {
	if t == nil {
		return ""
	}
	protos := t.Protocols
	if protos == "" {
		protos = "TLSv1.2 TLSv1.3"
	}
	s := fmt.Sprintf("    ssl_certificate %s;\n    ssl_certificate_key %s;\n    ssl_protocols %s;\n", t.CertFile, t.KeyFile, protos)
	if t.ClientCAFile != "" {
		s += fmt.Sprintf("    ssl_client_certificate %s;\n    ssl_verify_client on;\n", t.ClientCAFile)
	}
	return s
}

func (t *NginxTLS) logFields() string {
	if t == nil {
		return ""
	}
	return " $ssl_session_reused $server_protocol $ssl_protocol"
}

// TLSRequests reads the access log of an https nginx (NginxConfig.TLS and
// AccessLog): one TLSLine per answered request. Stop nginx first to read
// every line.
func (n *Nginx) TLSRequests() ([]TLSLine, error) {
	if n.accessLog == "" {
		return nil, ErrNoAccessLog
	}
	if !n.tls {
		return nil, errors.New("testpeer: nginx serves plain http")
	}
	f, err := os.Open(n.accessLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("testpeer: access log: %w", err)
	}
	defer f.Close()
	var out []TLSLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 {
			return nil, fmt.Errorf("testpeer: access log line %q: want 6 fields", sc.Text())
		}
		out = append(out, TLSLine{Status: fs[0], Method: fs[1], Path: fs[2], Reused: fs[3] == "r", Protocol: fs[4], TLSVersion: fs[5]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("testpeer: access log: %w", err)
	}
	return out, nil
}
