package stack

import (
	"errors"
	"testing"
)

// TestRespParserHostileLengths: a Content-Length the parser cannot trust
// is refused (errHTTP, counted malformed), never read as another number:
// two that disagree (RFC 9112 6.3: unrecoverable), digits split by
// whitespace. Repeated equal values are accepted (RFC 9110 8.6). Each
// case whole and byte by byte.
func TestRespParserHostileLengths(t *testing.T) {
	tests := []struct {
		name string
		in   string
		err  error // nil: a complete response of all of in
	}{
		{"two lengths disagree", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", errHTTP},
		{"two lengths disagree, smaller last", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 3\r\n\r\nabc", errHTTP},
		{"length 0 then 3", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: y\r\ncontent-length: 3\r\n\r\nabc", errHTTP},
		{"digits split by a space", "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\nxxxxxxxxxxxx", errHTTP},
		{"digits split by a tab", "HTTP/1.1 200 OK\r\nContent-Length: 1\t2\r\n\r\nxxxxxxxxxxxx", errHTTP},
		{"two equal lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", nil},
		{"one length, spaces around", "HTTP/1.1 200 OK\r\nContent-Length:  3 \t\r\n\r\nabc", nil},
		{"negative", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", errHTTP},
		{"20 digits", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", errHTTPUnsupported},
		{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffff\r\n", errHTTPUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p respParser
			n, done, err := p.feed([]byte(tt.in))
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("feed = %d, %v, %v; want error %v", n, done, err, tt.err)
			}
			if tt.err == nil && (err != nil || !done || n != len(tt.in)) {
				t.Errorf("feed = %d, %v, %v; want %d, true, nil", n, done, err, len(tt.in))
			}
			var q respParser
			var qerr error
			qdone := false
			for i := 0; i < len(tt.in) && !qdone && qerr == nil; i++ {
				_, qdone, qerr = q.feed([]byte{tt.in[i]})
			}
			if !errors.Is(qerr, tt.err) || (tt.err == nil && !qdone) {
				t.Errorf("byte-wise: done %v, err %v; want error %v", qdone, qerr, tt.err)
			}
		})
	}
}

// TestRespParserLengthAndChunked: with both Content-Length and chunked,
// the chunks frame the body and the body bytes are the chunk sizes.
func TestRespParserLengthAndChunked(t *testing.T) {
	in := "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
	var p respParser
	n, done, err := p.feed([]byte(in))
	if err != nil || !done || n != len(in) || p.body != 3 {
		t.Fatalf("feed = %d, %v, %v, body %d; want %d, true, nil, 3", n, done, err, p.body, len(in))
	}
}

// TestRespParserNoBodyStatuses: 204 and 304 end at the blank line with no
// body bytes, whatever Content-Length they carry.
func TestRespParserNoBodyStatuses(t *testing.T) {
	for _, in := range []string{"HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"} {
		var p respParser
		n, done, err := p.feed([]byte(in))
		if err != nil || !done || n != len(in) || p.body != 0 {
			t.Errorf("feed(%q) = %d, %v, %v, body %d; want %d, true, nil, 0", in, n, done, err, p.body, len(in))
		}
	}
}

// TestRespParserChunkedTotalBound: chunk sizes adding up to 2 GiB are
// refused as unsupported, as a Content-Length of 2 GiB is, instead of the
// body count wrapping at 4 GiB.
func TestRespParserChunkedTotalBound(t *testing.T) {
	var p respParser
	feed := func(s string) error {
		_, _, err := p.feed([]byte(s))
		return err
	}
	if err := feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40000000\r\n"); err != nil {
		t.Fatal(err)
	}
	mib := make([]byte, 1<<20)
	for range 1 << 10 { // the 1 GiB chunk
		if _, _, err := p.feed(mib); err != nil {
			t.Fatal(err)
		}
	}
	if err := feed("\r\n3fffffff\r\n"); err != nil {
		t.Fatalf("2 GiB - 1 in all: %v", err)
	}
	p = respParser{}
	_ = feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40000000\r\n")
	for range 1 << 10 {
		_, _, _ = p.feed(mib)
	}
	if err := feed("\r\n40000000\r\n"); !errors.Is(err, errHTTPUnsupported) {
		t.Fatalf("2 GiB in all: %v; want errHTTPUnsupported", err)
	}
}
