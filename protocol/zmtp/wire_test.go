package zmtp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// greetingBytes builds a greeting with the given version and mechanism.
func greetingBytes(major, minor byte, mech string) []byte {
	b := appendGreeting(nil)
	b[10], b[11] = major, minor
	copy(b[12:32], zeros[:20])
	copy(b[12:32], mech)
	return b
}

// splitReaders wraps input in readers that split it in different ways.
func splitReaders(in []byte) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":        func() io.Reader { return bytes.NewReader(in) },
		"byte by byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in)) },
		"halves":       func() io.Reader { return iotest.HalfReader(bytes.NewReader(in)) },
		"data+err":     func() io.Reader { return iotest.DataErrReader(bytes.NewReader(in)) },
	}
}

func TestReadGreeting(t *testing.T) {
	zmtp2 := []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 0x01, 0x05} // ZMTP 2.0: revision 1, DEALER
	tests := []struct {
		name    string
		in      []byte
		want    greeting
		wantErr error
	}{
		{"ours", appendGreeting(nil), greeting{major: 3, minor: 1, mechanism: "NULL"}, nil},
		{"ZMTP 3.0", greetingBytes(3, 0, "NULL"), greeting{major: 3, minor: 0, mechanism: "NULL"}, nil},
		{"ZMTP 4.2 accepted as 3.x", greetingBytes(4, 2, "NULL"), greeting{major: 4, minor: 2, mechanism: "NULL"}, nil},
		{"PLAIN", greetingBytes(3, 1, "PLAIN"), greeting{major: 3, minor: 1, mechanism: "PLAIN"}, nil},
		{"CURVE", greetingBytes(3, 0, "CURVE"), greeting{}, ErrMechanism},
		{"lower-case null", greetingBytes(3, 1, "null"), greeting{}, ErrMechanism},
		{"ZMTP 2.0 (12 bytes then waits)", zmtp2, greeting{}, ErrVersion},
		{"ZMTP 1.0", []byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, greeting{}, ErrBadGreeting},
		{"HTTP request", []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"), greeting{}, ErrBadGreeting},
		{"garbage", bytes.Repeat([]byte{0xAB}, 64), greeting{}, ErrBadGreeting},
		{"signature without bit 0", []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7E, 3}, greeting{}, ErrBadGreeting},
		{"truncated signature", []byte{0xFF, 0, 0}, greeting{}, io.ErrUnexpectedEOF},
		{"truncated after version", greetingBytes(3, 1, "NULL")[:40], greeting{}, io.ErrUnexpectedEOF},
		{"empty", nil, greeting{}, io.EOF},
	}
	for _, tt := range tests {
		for split, mk := range splitReaders(tt.in) {
			t.Run(tt.name+"/"+split, func(t *testing.T) {
				var buf [greetingSize]byte
				got, err := readGreeting(mk(), &buf)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("readGreeting(% x) error = %v; want %v", tt.in, err, tt.wantErr)
				}
				if tt.wantErr == nil && got != tt.want {
					t.Fatalf("readGreeting(% x) = %+v; want %+v", tt.in, got, tt.want)
				}
			})
		}
	}
}

func TestReadGreetingZMTP2StopsEarly(t *testing.T) {
	// A ZMTP 2.0 peer sends 12 bytes and waits for ours; we must reject it
	// without waiting for 64 bytes. The reader fails the test if asked for
	// more than the 11 bytes needed.
	in := []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 0x01, 0x05}
	r := io.MultiReader(bytes.NewReader(in), readerFunc(func([]byte) (int, error) {
		t.Fatal("readGreeting read past the version byte of a ZMTP 2.0 peer")
		return 0, io.EOF
	}))
	var buf [greetingSize]byte
	if _, err := readGreeting(r, &buf); !errors.Is(err, ErrVersion) {
		t.Fatalf("readGreeting(ZMTP 2.0) = %v; want ErrVersion", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestAppendGreeting(t *testing.T) {
	g := appendGreeting(nil)
	if len(g) != greetingSize {
		t.Fatalf("len(appendGreeting) = %d; want 64", len(g))
	}
	want := []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1, 'N', 'U', 'L', 'L'}
	if !bytes.Equal(g[:16], want) || !bytes.Equal(g[16:], make([]byte, 48)) {
		t.Fatalf("appendGreeting = % x", g)
	}
}

func longHeader(flags byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{flags | flagLong}, n)
}

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte("z"), 300)
	tests := []struct {
		name      string
		in        []byte
		limit     int64
		wantFlags byte
		wantBody  []byte
		wantErr   error
	}{
		{"short empty", []byte{0, 0}, 100, 0, []byte{}, nil},
		{"short", []byte{flagMore, 3, 'a', 'b', 'c'}, 100, flagMore, []byte("abc"), nil},
		{"long", append(longHeader(0, 300), big...), 1000, flagLong, big, nil},
		{"long with small size", append(longHeader(0, 2), 'h', 'i'), 100, flagLong, []byte("hi"), nil},
		{"command", []byte{flagCommand, 1, 0}, 100, flagCommand, []byte{0}, nil},
		{"at limit", []byte{0, 3, 'a', 'b', 'c'}, 3, 0, []byte("abc"), nil},
		{"over limit", []byte{0, 4, 'a', 'b', 'c', 'd'}, 3, 0, nil, ErrFrameTooLarge},
		{"3 GiB", longHeader(0, 3<<30), DefaultMaxFrameSize, 0, nil, ErrFrameTooLarge},
		{"2^50", longHeader(0, 1<<50), DefaultMaxFrameSize, 0, nil, ErrFrameTooLarge},
		{"2^64-1", longHeader(0, 1<<64-1), DefaultMaxFrameSize, 0, nil, ErrFrameTooLarge},
		{"reserved flags", []byte{0x80, 0}, 100, 0, nil, ErrProtocol},
		{"truncated body", []byte{0, 5, 'a'}, 100, 0, nil, io.ErrUnexpectedEOF},
		{"truncated long size", []byte{flagLong, 0, 0}, 100, 0, nil, io.ErrUnexpectedEOF},
		{"no size", []byte{0}, 100, 0, nil, io.ErrUnexpectedEOF},
		{"eof", nil, 100, 0, nil, io.EOF},
	}
	for _, tt := range tests {
		for split, mk := range splitReaders(tt.in) {
			t.Run(tt.name+"/"+split, func(t *testing.T) {
				fr := frameReader{br: bufio.NewReaderSize(mk(), 16), max: tt.limit}
				flags, body, err := fr.readFrame(tt.limit)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("readFrame(% x) error = %v; want %v", tt.in, err, tt.wantErr)
				}
				if tt.wantErr == nil && (flags != tt.wantFlags || !bytes.Equal(body, tt.wantBody)) {
					t.Fatalf("readFrame(% x) = %#x %q; want %#x %q", tt.in, flags, body, tt.wantFlags, tt.wantBody)
				}
			})
		}
	}
}

func TestReadBodyGrowsWithData(t *testing.T) {
	// A body larger than maxBodyChunk is read in growing chunks; the result
	// is exact and truncation is reported.
	n := 3*maxBodyChunk + 12345
	payload := bytes.Repeat([]byte("0123456789"), n/10+1)[:n]
	in := append(longHeader(0, uint64(n)), payload...)
	fr := frameReader{br: bufio.NewReader(iotest.HalfReader(bytes.NewReader(in))), max: DefaultMaxFrameSize}
	_, body, err := fr.readFrame(fr.max)
	if err != nil || !bytes.Equal(body, payload) {
		t.Fatalf("readFrame(%d bytes) = %d bytes, %v", n, len(body), err)
	}
	fr = frameReader{br: bufio.NewReader(bytes.NewReader(in[:len(in)-1])), max: DefaultMaxFrameSize}
	if _, _, err := fr.readFrame(fr.max); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("readFrame(truncated) = %v; want io.ErrUnexpectedEOF", err)
	}
}

func TestReadMessage(t *testing.T) {
	ping := appendCommand(nil, "PING", []byte{0, 10, 'c', 't', 'x'})
	tests := []struct {
		name     string
		in       []byte
		max      int64
		want     [][]byte
		wantCmds []string
		wantErr  error
	}{
		{"single", appendMessage(nil, strFrames("hello")), 100, strFrames("hello"), nil, nil},
		{"multi-part", appendMessage(nil, strFrames("a", "", "b")), 100, strFrames("a", "", "b"), nil, nil},
		{"ping before message", append(ping, appendMessage(nil, strFrames("x"))...), 100, strFrames("x"), []string{"PING"}, nil},
		{"unknown command ignored", append(appendCommand(nil, "FOO", nil), appendMessage(nil, strFrames("x"))...), 100, strFrames("x"), []string{"FOO"}, nil},
		{"command inside multi-part", append([]byte{flagMore, 1, 'a'}, ping...), 100, nil, nil, ErrProtocol},
		{"command with MORE", []byte{flagCommand | flagMore, 2, 1, 'X'}, 100, nil, nil, ErrProtocol},
		{"empty command", []byte{flagCommand, 0}, 100, nil, nil, ErrProtocol},
		{"truncated command name", []byte{flagCommand, 2, 5, 'X'}, 100, nil, nil, ErrProtocol},
		{"message total over max", appendMessage(nil, strFrames("aaaa", "bbbb")), 6, nil, nil, ErrFrameTooLarge},
		{"eof inside multi-part", []byte{flagMore, 1, 'a'}, 100, nil, nil, io.ErrUnexpectedEOF},
		{"too many frames", bytes.Repeat([]byte{flagMore, 0}, MaxMessageFrames+1), 1 << 20, nil, nil, ErrProtocol},
	}
	for _, tt := range tests {
		for split, mk := range splitReaders(tt.in) {
			t.Run(tt.name+"/"+split, func(t *testing.T) {
				fr := frameReader{br: bufio.NewReaderSize(mk(), 16), max: tt.max}
				var cmds []string
				got, err := fr.readMessage(func(name, data []byte) error {
					cmds = append(cmds, string(name))
					return nil
				})
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("readMessage error = %v; want %v", err, tt.wantErr)
				}
				if tt.wantErr == nil && (!framesEqual(got, tt.want) || strings.Join(cmds, ",") != strings.Join(tt.wantCmds, ",")) {
					t.Fatalf("readMessage = %q, commands %q; want %q, %q", got, cmds, tt.want, tt.wantCmds)
				}
			})
		}
	}
}

func TestParseReady(t *testing.T) {
	prop := func(name, value string) []byte { return appendProperty(nil, name, value) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	tests := []struct {
		name    string
		data    []byte
		want    ready
		wantErr error
	}{
		{"dealer with identity", cat(prop("Socket-Type", "DEALER"), prop("Identity", "w1")), ready{"DEALER", "w1", true}, nil},
		{"case-insensitive names", cat(prop("socket-type", "ROUTER"), prop("IDENTITY", "")), ready{"ROUTER", "", true}, nil},
		{"unknown property ignored", cat(prop("X-Foo", "bar"), prop("Socket-Type", "DEALER")), ready{"DEALER", "", true}, nil},
		{"no socket type", prop("Identity", "w1"), ready{}, ErrSocketType},
		{"empty", nil, ready{}, ErrSocketType},
		{"value overruns", cat([]byte{11}, []byte("Socket-Type"), []byte{0, 0, 0, 9}, []byte("DEAL")), ready{}, ErrProtocol},
		{"huge value length", cat([]byte{1}, []byte("a"), []byte{0xFF, 0xFF, 0xFF, 0xFF}), ready{}, ErrProtocol},
		{"truncated name", []byte{20, 'a'}, ready{}, ErrProtocol},
		{"zero-length name", []byte{0, 0, 0, 0, 0}, ready{}, ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReady(tt.data)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("parseReady(% x) error = %v; want %v", tt.data, err, tt.wantErr)
			}
			if tt.wantErr == nil && got != tt.want {
				t.Fatalf("parseReady(% x) = %+v; want %+v", tt.data, got, tt.want)
			}
		})
	}
}

func TestReadyRoundTrip(t *testing.T) {
	b := appendReady(nil, socketDealer, "node-1")
	fr := frameReader{br: bufio.NewReader(iotest.OneByteReader(bytes.NewReader(b))), max: 1 << 20}
	flags, body, err := fr.readFrame(fr.max)
	if err != nil || flags != flagCommand {
		t.Fatalf("readFrame(READY) = %#x, %v", flags, err)
	}
	name, data, err := parseCommand(body)
	if err != nil || string(name) != "READY" {
		t.Fatalf("parseCommand = %q, %v", name, err)
	}
	r, err := parseReady(data)
	if err != nil || r.socketType != "DEALER" || r.identity != "node-1" {
		t.Fatalf("parseReady = %+v, %v", r, err)
	}
	// Exactly what libzmq sends for a DEALER with identity "node-1".
	want := "\x04\x2f\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x06node-1"
	if string(b) != want {
		t.Fatalf("appendReady = %q; want %q", b, want)
	}
}

func TestAppendMessageHeaders(t *testing.T) {
	tests := []struct {
		name   string
		frames [][]byte
		want   []byte
	}{
		{"one short", strFrames("ab"), []byte{0, 2, 'a', 'b'}},
		{"two", strFrames("a", "b"), []byte{flagMore, 1, 'a', 0, 1, 'b'}},
		{"empty", [][]byte{{}}, []byte{0, 0}},
		{"long", [][]byte{make([]byte, 256)}, append(longHeader(0, 256), make([]byte, 256)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendMessage(nil, tt.frames)
			if !bytes.Equal(got, tt.want) || len(got) != encodedSize(tt.frames) {
				t.Fatalf("appendMessage(%q) = % x; want % x", tt.frames, got, tt.want)
			}
		})
	}
}

func TestAppendMessageAllocs(t *testing.T) {
	frames := [][]byte{make([]byte, 1024), make([]byte, 10)}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = appendMessage(buf[:0], frames) }); n != 0 {
		t.Fatalf("appendMessage allocs = %v; want 0", n)
	}
}

func TestCompatible(t *testing.T) {
	tests := []struct {
		ours, peer string
		want       bool
	}{
		{socketRouter, "DEALER", true},
		{socketRouter, "REQ", true},
		{socketRouter, "ROUTER", true},
		{socketRouter, "PUB", false},
		{socketRouter, "dealer", false},
		{socketDealer, "ROUTER", true},
		{socketDealer, "REP", true},
		{socketDealer, "DEALER", true},
		{socketDealer, "SUB", false},
		{socketDealer, "", false},
	}
	for _, tt := range tests {
		if got := compatible(tt.ours, tt.peer); got != tt.want {
			t.Errorf("compatible(%s, %q) = %v; want %v", tt.ours, tt.peer, got, tt.want)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in      string
		bind    bool
		want    string
		wantErr bool
	}{
		{"tcp://*:5557", true, ":5557", false},
		{"tcp://*:*", true, ":0", false},
		{"tcp://127.0.0.1:0", true, "127.0.0.1:0", false},
		{"tcp://[::1]:5557", true, "[::1]:5557", false},
		{"tcp://[::1]:5557", false, "[::1]:5557", false},
		{"tcp://localhost:5557", false, "localhost:5557", false},
		{"tcp://10.0.0.1:65535", false, "10.0.0.1:65535", false},
		{"tcp://*:5557", false, "", true},
		{"tcp://127.0.0.1:0", false, "", true},
		{"tcp://127.0.0.1:*", false, "", true},
		{"tcp://127.0.0.1:65536", true, "", true},
		{"tcp://127.0.0.1:-1", true, "", true},
		{"tcp://127.0.0.1:http", true, "", true},
		{"tcp://127.0.0.1", true, "", true},
		{"tcp://::1:5557", true, "", true},
		{"tcp://:5557", true, "", true},
		{"udp://127.0.0.1:5557", true, "", true},
		{"ipc:///tmp/x", true, "", true},
		{"127.0.0.1:5557", false, "", true},
		{"TCP://127.0.0.1:5557", false, "", true},
		{"", false, "", true},
		{"tcp://a b:5557", false, "", true},
	}
	for _, tt := range tests {
		got, err := parseEndpoint(tt.in, tt.bind)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseEndpoint(%q, bind=%v) = %q, %v; want %q, error %v", tt.in, tt.bind, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrEndpoint) {
			t.Errorf("parseEndpoint(%q) error %v does not wrap ErrEndpoint", tt.in, err)
		}
	}
}

func TestValidIdentity(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"", true},
		{"a", true},
		{"node_1_abcdef0123456789", true},
		{"héllo", true},
		{strings.Repeat("x", 255), true},
		{strings.Repeat("x", 256), false},
		{"\x00abc", false},
		{"\xff\xfe", false},
	}
	for _, tt := range tests {
		err := validIdentity(tt.id)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidIdentity)) {
			t.Errorf("validIdentity(%q) = %v; want ok=%v", tt.id, err, tt.ok)
		}
		d, err := Dial("tcp://127.0.0.1:1", tt.id, Options{Linger: -1})
		if (err == nil) != tt.ok {
			t.Errorf("Dial(identity %q) = %v; want ok=%v", tt.id, err, tt.ok)
		}
		if d != nil {
			d.Close()
		}
	}
}

func TestBufPool(t *testing.T) {
	tests := []struct{ n, wantCap int }{
		{0, 256}, {1, 256}, {256, 256}, {257, 512}, {1024, 1024}, {100 << 10, 128 << 10}, {4 << 20, 4 << 20}, {4<<20 + 1, 4<<20 + 1},
	}
	for _, tt := range tests {
		b := getBuf(tt.n)
		if len(b) != 0 || cap(b) != tt.wantCap {
			t.Errorf("getBuf(%d) = len %d cap %d; want len 0 cap %d", tt.n, len(b), cap(b), tt.wantCap)
		}
		putBuf(append(b, 1))
	}
	putBuf(make([]byte, 300)) // not a pool size: dropped
	if b := getBuf(300); cap(b) != 512 {
		t.Errorf("getBuf(300) after putBuf of a 300-byte buffer: cap %d; want 512", cap(b))
	}
}
