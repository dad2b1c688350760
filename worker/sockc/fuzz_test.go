package sockc

import (
	"bytes"
	"testing"
)

// FuzzReplyEnd feeds data in chunks to the incremental delimiter search
// of TCPConn.Read: it must find the first delimiter exactly when the
// bytes so far hold it, wherever the chunks split it.
func FuzzReplyEnd(f *testing.F) {
	f.Add([]byte("abc\r\ndef"), []byte("\r\n"), uint8(4))
	f.Add([]byte("xxxxyyyy"), []byte("xy"), uint8(1))
	f.Add([]byte("aaaa"), []byte("aa"), uint8(3))
	f.Fuzz(func(t *testing.T, data, delim []byte, chunk uint8) {
		if len(delim) == 0 || chunk == 0 {
			return
		}
		want := bytes.Index(data, delim)
		var buf []byte
		scanned := 0
		for i := 0; i < len(data); i += int(chunk) {
			buf = append(buf, data[i:min(i+int(chunk), len(data))]...)
			n, ok := replyEnd(buf, Until{Delimiter: delim}, &scanned)
			holds := want >= 0 && want+len(delim) <= len(buf)
			if ok != holds {
				t.Fatalf("after %d bytes: found %v, want %v", len(buf), ok, holds)
			}
			if ok {
				if n != want+len(delim) {
					t.Fatalf("reply of %d bytes, want %d", n, want+len(delim))
				}
				return
			}
		}
	})
}
