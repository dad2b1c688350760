package wsframe

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestAcceptKey(t *testing.T) {
	// RFC 6455 1.3's example.
	if got := AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("AcceptKey = %q", got)
	}
}

func TestRoundTrip(t *testing.T) {
	mask := [4]byte{1, 2, 3, 4}
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 70000} {
		p := bytes.Repeat([]byte("x"), n)
		for _, server := range []bool{false, true} {
			var m *[4]byte
			if server {
				m = &mask // frames to a server are masked
			}
			b := AppendFrame(nil, OpText, p, m)
			r := &Reader{R: bytes.NewReader(b), Server: server}
			f, err := r.Next(nil)
			if err != nil || f.Op != OpText || !bytes.Equal(f.Payload, p) {
				t.Fatalf("n=%d server=%v: op %d, %d bytes, err %v", n, server, f.Op, len(f.Payload), err)
			}
			if _, err := r.Next(nil); !errors.Is(err, io.EOF) {
				t.Fatalf("after the frame: %v, want EOF", err)
			}
		}
	}
}

func TestFragmentsAroundPing(t *testing.T) {
	var b []byte
	b = append(b, 0x01, 3) // text, not FIN
	b = append(b, "hel"...)
	b = AppendFrame(b, OpPing, []byte("p"), nil)
	b = append(b, 0x80, 2) // continuation, FIN
	b = append(b, "lo"...)
	r := &Reader{R: bytes.NewReader(b)}
	buf := make([]byte, 0, 16)
	f, err := r.Next(buf)
	if err != nil || f.Op != OpPing || string(f.Payload) != "p" {
		t.Fatalf("first: %+v %v", f, err)
	}
	f, err = r.Next(buf)
	if err != nil || f.Op != OpText || string(f.Payload) != "hello" {
		t.Fatalf("second: op %d %q %v", f.Op, f.Payload, err)
	}
}

func TestClose(t *testing.T) {
	b := AppendClose(nil, 4001, "bye", nil)
	f, err := (&Reader{R: bytes.NewReader(b)}).Next(nil)
	if err != nil || f.Op != OpClose {
		t.Fatal(f, err)
	}
	code, reason, err := ParseClose(f.Payload)
	if code != 4001 || reason != "bye" || err != nil {
		t.Fatal(code, reason, err)
	}
}

func TestErrors(t *testing.T) {
	mask := &[4]byte{9, 9, 9, 9}
	tests := []struct {
		name   string
		in     []byte
		server bool
		max    int64
		want   error
	}{
		{"reserved bit", []byte{0xC1, 0}, false, 0, ErrProtocol},
		{"unknown opcode", []byte{0x83, 0}, false, 0, ErrProtocol},
		{"fragmented ping", []byte{0x09, 0}, false, 0, ErrProtocol},
		{"long ping", append([]byte{0x89, 126, 0, 126}, make([]byte, 126)...), false, 0, ErrProtocol},
		{"continuation first", []byte{0x80, 0}, false, 0, ErrProtocol},
		{"new message inside one", []byte{0x01, 1, 'a', 0x81, 0}, false, 0, ErrProtocol},
		{"masked from server", AppendFrame(nil, OpText, []byte("a"), mask), false, 0, ErrProtocol},
		{"unmasked from client", AppendFrame(nil, OpText, []byte("a"), nil), true, 0, ErrProtocol},
		{"64-bit top bit", []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}, false, 0, ErrProtocol},
		{"too large", AppendFrame(nil, OpBinary, make([]byte, 11), nil), false, 10, ErrTooLarge},
		{"bad utf-8", AppendFrame(nil, OpText, []byte{0xff}, nil), false, 0, ErrInvalidUTF8},
		{"1-byte close", []byte{0x88, 1, 3}, false, 0, ErrProtocol},
		{"close code 1005", AppendClose(nil, 1005, "", nil), false, 0, ErrProtocol},
		{"close code 999", AppendClose(nil, 999, "", nil), false, 0, ErrProtocol},
		{"cut payload", []byte{0x81, 5, 'a'}, false, 0, io.ErrUnexpectedEOF},
		{"cut header", []byte{0x81}, false, 0, io.ErrUnexpectedEOF},
		{"cut message", []byte{0x01, 1, 'a'}, false, 0, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reader{R: bytes.NewReader(tt.in), Server: tt.server, MaxMessage: tt.max}
			_, err := r.Next(nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCloseCodeFor(t *testing.T) {
	for err, want := range map[error]int{ErrTooLarge: 1009, ErrInvalidUTF8: 1007, ErrProtocol: 1002} {
		if got := CloseCodeFor(err); got != want {
			t.Errorf("CloseCodeFor(%v) = %d, want %d", err, got, want)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add(AppendFrame(nil, OpText, []byte("hello"), nil), false)
	f.Add(AppendFrame(nil, OpBinary, make([]byte, 300), &[4]byte{1, 2, 3, 4}), true)
	f.Add(AppendClose(nil, 1000, "x", nil), false)
	f.Add([]byte{0x01, 1, 'a', 0x89, 0, 0x80, 1, 'b'}, false)
	f.Fuzz(func(t *testing.T, in []byte, server bool) {
		r := &Reader{R: bytes.NewReader(in), Server: server, MaxMessage: 1 << 16}
		var buf []byte
		for range 64 {
			fr, err := r.Next(buf)
			if err != nil {
				return
			}
			if int64(len(fr.Payload)) > 1<<16 {
				t.Fatalf("payload of %d bytes over the limit", len(fr.Payload))
			}
			if fr.Op == OpText || fr.Op == OpBinary {
				buf = fr.Payload
			}
		}
	})
}

func BenchmarkReadMessage(b *testing.B) {
	frame := AppendFrame(nil, OpText, bytes.Repeat([]byte("a"), 64), nil)
	rd := bytes.NewReader(frame)
	r := &Reader{R: rd}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(frame)
		if _, err := r.Next(buf); err != nil {
			b.Fatal(err)
		}
	}
}
