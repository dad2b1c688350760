package httpc

import (
	"bytes"
	"compress/gzip"
	"testing"
)

// FuzzResponse feeds arbitrary bytes to the response reader as the
// server's answer. It must never panic, and a parsed response must respect
// the body limit and own its bytes.
func FuzzResponse(f *testing.F) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("z"), 300))
	zw.Close()
	seeds := []string{
		okResponse("hello"),
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nuntil eof",
		"HTTP/1.0 404 Not Found\r\nSet-Cookie: a=b; Path=/; Max-Age=10\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + itoa(gz.Len()) + "\r\n\r\n" + gz.String(),
		"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: 3\r\n\r\nabc",
		"garbage\r\n\r\n",
		"",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	c, err := New("http://fuzz.invalid", Options{MaxResponseBodySize: 1000})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		cl := call{method: "GET", ep: &c.cfg.base, path: "/", req: &Request{}, useJar: true}
		if head {
			cl.method = "HEAD"
		}
		conn := &fakeConn{r: bytes.NewReader(data)}
		var resp Response
		res := c.exchange(conn, &cl, &resp)
		if res.err != nil {
			_ = (&Error{Kind: classify(res.err, res.op), Op: res.op, Err: res.err}).Error()
			return
		}
		if len(resp.Body) > 1000 {
			t.Fatalf("body of %d bytes beyond the 1000-byte limit", len(resp.Body))
		}
		_ = resp.Headers()
		_ = resp.Reason()
		if len(resp.Body) > 0 && len(data) > 0 {
			// The body must not alias the pooled buffers: scribbling on the
			// input and on a fresh exchange must leave it unchanged.
			keep := string(resp.Body)
			var other Response
			c.exchange(&fakeConn{r: bytes.NewReader([]byte(okResponse("overwrite-overwrite")))}, &cl, &other)
			if string(resp.Body) != keep {
				t.Fatal("Response.Body changed after another exchange")
			}
		}
	})
}
