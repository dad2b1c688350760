package httpc

import (
	"encoding/binary"
	"time"
)

// Response is a complete HTTP response. It owns all its bytes: nothing in
// it refers to pooled or connection memory, so it may be kept, read from
// other goroutines after Do returns, and modified freely.
//
// A Response passed to DoInto is overwritten by that call (its buffers are
// reused, so earlier Body slices then see the new bytes); that is the only
// way its contents change.
type Response struct {
	// StatusCode is the status of the final response (after redirects).
	StatusCode int
	// Body is the response body, decoded if the server sent it with
	// Content-Encoding gzip or deflate. Empty for HEAD.
	Body []byte
	// Duration is the time Do took, connecting and redirects included:
	// Locust's response_time.
	Duration time.Duration
	// Redirects is the number of redirects followed.
	Redirects int
	// Reused reports that the request (the first one, before any
	// redirect) went over the Client's keep-alive connection as it was
	// already open: no connect and no retry on a new connection were
	// needed. False for a new or replaced connection and for one-request
	// connections to other origins.
	Reused bool
	// Phases are the parts of Duration: DNS, connect, TLS, time to first
	// byte, body (see Phases).
	Phases Phases

	// hdr holds length-prefixed fields (appendField): the reason phrase,
	// then key and value of each header.
	hdr []byte
	// The final URL: origin + prefix + path (no allocation on success).
	origin, prefix, path string
	// firstByte and bodyEnd time the final response (Phases).
	firstByte, bodyEnd time.Time
}

// ContentLength returns len(Body): what Locust records as the response
// length (len(response.content)).
func (r *Response) ContentLength() int64 { return int64(len(r.Body)) }

// Reason returns the reason phrase of the status line ("Not Found").
func (r *Response) Reason() string {
	reason, _, _ := nextField(r.hdr)
	return string(reason)
}

// URL returns the URL of the final response, as requests' response.url.
func (r *Response) URL() string { return r.origin + r.prefix + r.path }

// Header returns the first value of the header named key (case-insensitive),
// or "".
func (r *Response) Header(key string) string {
	v, _ := r.lookup(key)
	return string(v)
}

func (r *Response) lookup(key string) ([]byte, bool) {
	_, b, ok := nextField(r.hdr)
	for ok && len(b) > 0 {
		var k, v []byte
		k, b, _ = nextField(b)
		v, b, ok = nextField(b)
		if ok && equalFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// Headers returns a copy of all response headers in wire order.
func (r *Response) Headers() []Header {
	var hs []Header
	_, b, ok := nextField(r.hdr)
	for ok && len(b) > 0 {
		var k, v []byte
		k, b, _ = nextField(b)
		v, b, ok = nextField(b)
		if ok {
			hs = append(hs, Header{Key: string(k), Value: string(v)})
		}
	}
	return hs
}

// appendField appends f length-prefixed to dst.
func appendField(dst, f []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(f)))
	return append(dst, f...)
}

// nextField splits the first length-prefixed field off b.
func nextField(b []byte) (field, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}

// StatusError returns nil for status codes below 400 and an *Error of Kind
// HTTPStatus for 4xx and 5xx, whose message is requests' HTTPError:
// HTTPError('404 Client Error: Not Found for url: http://host/missing').
// Checking the status is the caller's decision (Locust's catch_response).
func (r *Response) StatusError() error {
	if r.StatusCode < 400 || r.StatusCode > 599 {
		return nil
	}
	return &Error{Kind: HTTPStatus, Op: "status", URL: r.URL(), Status: r.StatusCode, Reason: r.Reason()}
}

// reset empties r for a new exchange, keeping its buffers.
func (r *Response) reset() {
	r.StatusCode = 0
	r.Body = r.Body[:0]
	r.hdr = r.hdr[:0]
	r.Duration = 0
	r.Redirects = 0
	r.Reused = false
	r.Phases = Phases{}
	r.firstByte, r.bodyEnd = time.Time{}, time.Time{}
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
