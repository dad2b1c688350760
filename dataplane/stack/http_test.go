package stack

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestRespParser(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		status uint16
		n      int // bytes of the response; -1 means all of in
		err    error
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, -1, nil},
		{"case and spaces", "HTTP/1.1 201 Created\r\ncOnTeNt-LeNgTh:   3 \r\nX: y\r\n\r\nabc", 201, -1, nil},
		{"zero length", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 404, -1, nil},
		{"lf only", "HTTP/1.0 200 OK\nContent-Length: 2\n\nok", 200, -1, nil},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx", 200, -1, nil},
		{"204 without length", "HTTP/1.1 204 No Content\r\nServer: x\r\n\r\n", 204, -1, nil},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\na;ext=1\r\n0123456789\r\n0\r\n\r\n", 200, -1, nil},
		{"chunked trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nx\r\n0\r\nT: v\r\n\r\n", 200, -1, nil},
		{"trailing bytes", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxEXTRA", 200, 39, nil},
		{"near names", "HTTP/1.1 200 OK\r\nContent-Lengthy: 9\r\nContent-Type: a\r\nContent-Length: 1\r\n\r\nx", 200, -1, nil},
		{"no framing", "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody", 200, 0, errHTTPUnsupported},
		{"interim 100 skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, -1, nil},
		{"interims skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 404, -1, nil},
		{"too many interims", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInterim+1), 100, 0, errHTTPUnsupported},
		{"switching protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", 101, 0, errHTTPUnsupported},
		{"gzip coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 200, 0, errHTTPUnsupported},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", 200, 0, errHTTPUnsupported},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", 200, 0, errHTTP},
		{"empty length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", 200, 0, errHTTP},
		{"not http", "SSH-2.0-OpenSSH\r\n", 0, 0, errHTTP},
		{"bad status", "HTTP/1.1 2x0 OK\r\n", 0, 0, errHTTP},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, 0, errHTTP},
		{"chunk without crlf", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy", 200, 0, errHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.n
			if want < 0 {
				want = len(tt.in)
			}
			// Whole, then byte by byte: the same outcome.
			var p respParser
			n, done, err := p.feed([]byte(tt.in))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Errorf("feed(%q) error = %v; want %v", tt.in, err, tt.err)
				}
			} else if err != nil || !done || n != want || p.status != tt.status {
				t.Errorf("feed(%q) = %d, %v, %v, status %d; want %d, true, nil, %d", tt.in, n, done, err, p.status, want, tt.status)
			}
			var q respParser
			var qerr error
			total, qdone := 0, false
			for i := 0; i < len(tt.in) && !qdone && qerr == nil; i++ {
				var k int
				k, qdone, qerr = q.feed([]byte{tt.in[i]})
				total += k
			}
			if !errors.Is(qerr, tt.err) || (tt.err == nil && (total != want || !qdone || q.status != tt.status)) {
				t.Errorf("byte-wise feed(%q) = %d, %v, %v, status %d; want %d, true, %v, %d", tt.in, total, qdone, qerr, q.status, want, tt.err, tt.status)
			}
		})
	}
}

// TestServerPagesParse: the server's pages, through net/http's reader and
// through the client's parser, end where they should.
func TestServerPagesParse(t *testing.T) {
	for _, page := range [][]byte{serverResponse(128), serverResponse(0), chunkedResponse(2500), chunkedResponse(0), badMethodResponse} {
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(page))), nil)
		if err != nil {
			t.Fatalf("http.ReadResponse(%.60q) = %v", page, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading body of %.60q: %v", page, err)
		}
		var p respParser
		n, done, perr := p.feed(page)
		if perr != nil || !done || n != len(page) || int(p.status) != resp.StatusCode {
			t.Errorf("feed(%.60q) = %d, %v, %v, status %d; want %d, true, nil, %d (body %d bytes)",
				page, n, done, perr, p.status, len(page), resp.StatusCode, len(body))
		}
	}
}

func TestBuildRequest(t *testing.T) {
	got := string(BuildRequest("GET", "/x", "h", [][2]string{{"A", "b"}}))
	if want := "GET /x HTTP/1.1\r\nHost: h\r\nA: b\r\n\r\n"; got != want {
		t.Errorf("BuildRequest = %q; want %q", got, want)
	}
}

// FuzzRespParser: random bytes never panic, feeding in two pieces gives the
// same outcome as feeding at once, and a response net/http frames with
// Content-Length or chunked encoding is found to end where net/http's
// reader stops.
func FuzzRespParser(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), 7)
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), 30)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		var p respParser
		n, done, err := p.feed(b)
		if n < 0 || n > len(b) {
			t.Fatalf("feed consumed %d of %d", n, len(b))
		}
		if len(b) == 0 {
			return
		}
		split = int(uint(split) % uint(len(b)))
		var q respParser
		n1, d1, e1 := q.feed(b[:split])
		n2, d2, e2 := n1, d1, e1
		if e1 == nil && !d1 {
			var k int
			k, d2, e2 = q.feed(b[split:])
			n2 = split + k
		}
		if (err == nil) != (e2 == nil) || done != d2 || (done && n != n2) {
			t.Errorf("feed(%q) = %d, %v, %v; split at %d: %d, %v, %v", b, n, done, err, split, n2, d2, e2)
		}
		if !done {
			return
		}
		br := bufio.NewReader(strings.NewReader(string(b)))
		resp, rerr := http.ReadResponse(br, nil)
		if rerr != nil {
			return
		}
		framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0
		_, cerr := io.Copy(io.Discard, resp.Body)
		if !framed || cerr != nil || p.status != uint16(resp.StatusCode) {
			return
		}
		if rest := br.Buffered(); len(b)-rest != n && len(resp.Trailer) == 0 {
			t.Errorf("feed(%q) ends at %d; net/http at %d", b, n, len(b)-rest)
		}
	})
}

// TestRespParserCloseAndBody: Connection: close (the exact token only) and
// the body size announced by Content-Length or the chunk sizes.
func TestRespParserCloseAndBody(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		close bool
		body  uint32
	}{
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc", true, 3},
		{"close case and spaces", "HTTP/1.1 200 OK\r\nconnection:   CLOSE \r\nContent-Length: 0\r\n\r\n", true, 0},
		{"keep-alive", "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", false, 1},
		{"closed", "HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 1\r\n\r\nx", false, 1},
		{"close in a list", "HTTP/1.1 200 OK\r\nConnection: close, te\r\nContent-Length: 1\r\n\r\nx", false, 1},
		{"other header", "HTTP/1.1 200 OK\r\nX-Connection: close\r\nConnectionX: close\r\nContent-Length: 1\r\n\r\nx", false, 1},
		{"chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\na\r\n0123456789\r\n0\r\n\r\n", true, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p respParser
			n, done, err := p.feed([]byte(tt.in))
			if err != nil || !done || n != len(tt.in) {
				t.Fatalf("feed = %d, %v, %v; want %d, true, nil", n, done, err, len(tt.in))
			}
			if got := p.flags&pfClose != 0; got != tt.close || p.body != tt.body {
				t.Errorf("close %v, body %d; want %v, %d", got, p.body, tt.close, tt.body)
			}
		})
	}
}
