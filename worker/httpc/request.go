package httpc

import (
	"bufio"
	"strconv"
	"strings"
	"time"
)

// Header is one HTTP header field. Slices of Header keep their order on the
// wire; a key may repeat.
type Header struct {
	Key, Value string
}

// Request is one HTTP request of a user. Do reads it and never modifies or
// retains it, so one Request may be reused for many calls (but not
// modified while a Do that uses it runs).
type Request struct {
	// Method is the HTTP method; "" means GET.
	Method string
	// Path is appended to the base URL's path, like Locust's
	// self.client.get("/path"): "/missing", "/search?q=x". An absolute
	// http:// or https:// URL is used as is; if its origin differs from
	// the base URL's, the request goes over a one-request connection of
	// its own (without the cookie jar). Bytes that cannot appear in a
	// request line (controls, spaces, non-ASCII) are percent-encoded.
	Path string
	// Name groups requests in the statistics, like Locust's name=
	// argument. "" means Path. Do does not use it; see StatsName.
	Name string
	// Headers are sent after the client's default headers and
	// Options.Headers. A key given here replaces a default header of the
	// same name (User-Agent, Accept, Accept-Encoding, Host). Content-Length
	// and Transfer-Encoding are computed and cannot be set.
	Headers []Header
	// Body is sent with a Content-Length header. POST, PUT and PATCH send
	// "Content-Length: 0" when Body is empty.
	Body []byte
}

// StatsName returns the name the request is reported under: Name, or Path
// if Name is empty.
func (r *Request) StatsName() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Path
}

// call is one HTTP exchange being made: the original request or a
// redirect of it.
type call struct {
	method   string
	ep       *endpoint
	prefix   string // base URL path, "" after a redirect
	path     string
	req      *Request
	body     []byte
	useJar   bool
	deadline time.Time
	ph       *Phases // where dial times DNS, connect and TLS; nil: not timed (HTTP/2)
}

// headerOverrides reports which default headers hs replaces.
type overrides uint8

const (
	overrideHost overrides = 1 << iota
	overrideUserAgent
	overrideAccept
	overrideAcceptEncoding
)

func overridesOf(hs []Header) overrides {
	var o overrides
	for i := range hs {
		k := hs[i].Key
		switch {
		case strings.EqualFold(k, "Host"):
			o |= overrideHost
		case strings.EqualFold(k, "User-Agent"):
			o |= overrideUserAgent
		case strings.EqualFold(k, "Accept"):
			o |= overrideAccept
		case strings.EqualFold(k, "Accept-Encoding"):
			o |= overrideAcceptEncoding
		}
	}
	return o
}

// computed reports whether the header is one the client computes itself.
func computed(k string) bool {
	return strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Transfer-Encoding")
}

// validRequest checks everything writeRequest would otherwise have to
// reject halfway through. It does not allocate.
func validRequest(method string, hs ...[]Header) bool {
	if method == "" {
		return false
	}
	for i := 0; i < len(method); i++ {
		if !isTokenChar(method[i]) {
			return false
		}
	}
	for _, h := range hs {
		for i := range h {
			if !validHeaderKey(h[i].Key) || !validHeaderValue(h[i].Value) {
				return false
			}
		}
	}
	return true
}

func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isTokenChar(k[i]) {
			return false
		}
	}
	return true
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// writeTarget writes s, percent-encoding bytes that cannot appear in a
// request target.
func writeTarget(bw *bufio.Writer, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > 0x20 && c < 0x7f {
			continue
		}
		bw.WriteString(s[start:i])
		const hex = "0123456789ABCDEF"
		bw.WriteByte('%')
		bw.WriteByte(hex[c>>4])
		bw.WriteByte(hex[c&0xf])
		start = i + 1
	}
	bw.WriteString(s[start:])
}

// writeRequest writes the request head and body to bw. The request must
// have passed validRequest. Errors are reported by bw.Flush.
func (c *Client) writeRequest(bw *bufio.Writer, cl *call, scratch []byte, now time.Time) {
	cfg := c.cfg
	bw.WriteString(cl.method)
	bw.WriteByte(' ')
	target := cl.path
	if cl.prefix == "" && target == "" {
		target = "/"
	}
	writeTarget(bw, cl.prefix)
	writeTarget(bw, target)
	bw.WriteString(" HTTP/1.1\r\n")

	o := overridesOf(cl.req.Headers)
	if o&overrideHost == 0 && cfg.overrides&overrideHost == 0 {
		bw.WriteString("Host: ")
		bw.WriteString(cl.ep.host)
		bw.WriteString("\r\n")
	}
	if o == 0 {
		bw.Write(cfg.defaultHeaders)
	} else {
		if o&overrideUserAgent == 0 && cfg.overrides&overrideUserAgent == 0 {
			writeHeader(bw, "User-Agent", cfg.userAgent)
		}
		if o&overrideAccept == 0 && cfg.overrides&overrideAccept == 0 {
			writeHeader(bw, "Accept", "*/*")
		}
		if o&overrideAcceptEncoding == 0 && cfg.overrides&overrideAcceptEncoding == 0 && !cfg.disableCompress {
			writeHeader(bw, "Accept-Encoding", "gzip, deflate")
		}
		bw.Write(cfg.optionHeaders)
	}
	if cl.useJar && c.jar != nil {
		c.jar.write(bw, cl.fullPath(), cl.ep.tls, now)
	}
	for i := range cl.req.Headers {
		h := &cl.req.Headers[i]
		if !computed(h.Key) {
			writeHeader(bw, h.Key, h.Value)
		}
	}
	if len(cl.body) > 0 || cl.method == "POST" || cl.method == "PUT" || cl.method == "PATCH" {
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(scratch[:0], int64(len(cl.body)), 10))
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
	bw.Write(cl.body)
}

// fullPath is the request target; it allocates only with a base path.
func (cl *call) fullPath() string {
	if cl.prefix == "" {
		return cl.path
	}
	return cl.prefix + cl.path
}

func writeHeader(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}
