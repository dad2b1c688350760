package zmtp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"testing"
)

// Real Locust payloads (client_ready and ack captured from Locust 2.x), used
// as frame bodies in the seeds.
var locustSeeds = []string{
	"93ac636c69656e745f7265616479ab322e34362e342e64657630d923766d5f6236316238656265386538363462343338326339303732636533396433303262",
	"93a361636b81a5696e64657800d923766d5f6236316238656265386538363462343338326339303732636533396433303262",
}

// clientHello is what a DEALER peer sends first: greeting and READY.
func clientHello(socketType, identity string) []byte {
	return appendReady(appendGreeting(nil), socketType, identity)
}

// chunkReader returns at most n bytes per Read, to exercise split reads.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

func addConnSeeds(f *testing.F) {
	hello := clientHello("DEALER", "worker-1")
	var payloads [][]byte
	for _, s := range locustSeeds {
		b, _ := hex.DecodeString(s)
		payloads = append(payloads, b)
	}
	msgs := appendMessage(nil, payloads[:1])
	msgs = appendMessage(msgs, [][]byte{payloads[1], []byte("extra")})
	msgs = appendCommand(msgs, "PING", []byte{0, 5, 'x'})
	msgs = appendMessage(msgs, [][]byte{make([]byte, 300)})
	for _, chunk := range []byte{1, 3, 64, 255} {
		f.Add(chunk, append(bytes.Clone(hello), msgs...))
		f.Add(chunk, hello)
	}
	f.Add(byte(7), []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add(byte(2), []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 5, 0, 0})
	f.Add(byte(9), append(bytes.Clone(hello), longHeader(0, 3<<30)...))
	f.Add(byte(9), append(bytes.Clone(hello), longHeader(0, 1<<50)...))
	f.Add(byte(9), append(appendGreeting(nil), longHeader(flagCommand, 1<<50)...))
	f.Add(byte(64), clientHello("PUB", ""))
	f.Add(byte(64), clientHello("DEALER", "\x00bad"))
	f.Add(byte(64), append(appendGreeting(nil), appendError(nil, "go away")...))
}

// FuzzConn feeds arbitrary bytes to the server side of a connection: the
// Router's handshake, then its read loop. It must never panic, hang or
// allocate more than the frame limit.
func FuzzConn(f *testing.F) {
	addConnSeeds(f)
	f.Fuzz(func(t *testing.T, chunk byte, in []byte) {
		const max = 1 << 16
		br := bufio.NewReaderSize(&chunkReader{r: bytes.NewReader(in), n: int(chunk) + 1}, 64)
		info, err := handshake(br, io.Discard, socketRouter, "", max)
		if err != nil {
			return
		}
		if !compatible(socketRouter, info.socketType) {
			t.Fatalf("handshake accepted socket type %q", info.socketType)
		}
		c := &conn{fr: frameReader{br: br, max: max}, info: info, pong: make(chan []byte, 1), done: make(chan struct{})}
		n := 0
		err = c.readLoop(func(frames [][]byte) bool {
			var total int
			for _, f := range frames {
				total += len(f)
			}
			if len(frames) == 0 || len(frames) > MaxMessageFrames || total > max {
				t.Fatalf("readLoop delivered %d frames, %d bytes", len(frames), total)
			}
			n++
			select {
			case <-c.pong: // drain, as the writer would
			default:
			}
			return true
		})
		if err == nil {
			t.Fatal("readLoop returned nil at end of input")
		}
	})
}

// FuzzGreeting checks that greeting parsing never panics and that accepted
// greetings are ZMTP 3.x NULL or PLAIN.
func FuzzGreeting(f *testing.F) {
	f.Add(appendGreeting(nil))
	f.Add(greetingBytes(3, 0, "NULL"))
	f.Add(greetingBytes(3, 1, "CURVE"))
	f.Add(appendGreetingMech(nil, mechPlain, true))
	f.Add([]byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 5})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var buf [greetingSize]byte
		g, err := readGreeting(bytes.NewReader(in), &buf)
		if err != nil {
			return
		}
		if g.major < 3 || (g.mechanism != mechNull && g.mechanism != mechPlain) || len(in) < greetingSize {
			t.Fatalf("readGreeting(% x) accepted %+v", in, g)
		}
	})
}

// FuzzCommand checks command and READY parsing.
func FuzzCommand(f *testing.F) {
	f.Add(appendReady(nil, "DEALER", "w1")[2:])
	f.Add(appendError(nil, "reason")[2:])
	f.Add(appendCommand(nil, "PING", []byte{0, 1, 'a'})[2:])
	f.Add([]byte{5, 'R', 'E', 'A', 'D', 'Y', 11})
	f.Fuzz(func(t *testing.T, body []byte) {
		name, data, err := parseCommand(body)
		if err != nil {
			return
		}
		if len(name) == 0 || len(name)+len(data)+1 != len(body) {
			t.Fatalf("parseCommand(% x) = %q, %d bytes", body, name, len(data))
		}
		r, err := parseReady(data)
		if err == nil && !r.hasType {
			t.Fatalf("parseReady(% x) accepted without Socket-Type", data)
		}
		parseErrorReason(data)
		c := &conn{pong: make(chan []byte, 1)}
		c.onCommand(name, data) //nolint:errcheck // only checking for panics
	})
}

// FuzzFrame checks frame and message decoding, including split reads, and
// that every decoded message re-encodes to the same frames.
func FuzzFrame(f *testing.F) {
	f.Add(byte(1), appendMessage(nil, strFrames("a", "bc")))
	f.Add(byte(3), appendMessage(nil, [][]byte{make([]byte, 1000)}))
	f.Add(byte(5), longHeader(0, 1<<50))
	f.Add(byte(5), longHeader(0, 3<<30))
	f.Add(byte(0), appendCommand(nil, "PING", []byte{0, 0}))
	f.Fuzz(func(t *testing.T, chunk byte, in []byte) {
		fr := frameReader{br: bufio.NewReaderSize(&chunkReader{r: bytes.NewReader(in), n: int(chunk) + 1}, 16), max: 1 << 16}
		for {
			frames, err := fr.readMessage(func(name, data []byte) error { return nil })
			if err != nil {
				return
			}
			enc := appendMessage(nil, frames)
			fr2 := frameReader{br: bufio.NewReader(bytes.NewReader(enc)), max: 1 << 16}
			again, err := fr2.readMessage(func(name, data []byte) error { return nil })
			if err != nil || !framesEqual(frames, again) {
				t.Fatalf("re-encoding %q: %q, %v", frames, again, err)
			}
		}
	})
}

// FuzzPlainHello checks HELLO parsing: it never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzPlainHello(f *testing.F) {
	f.Add(appendHello(nil, "cicada", "s3cret")[8:])
	f.Add([]byte{0, 0})
	f.Add([]byte{255, 'a'})
	f.Add([]byte{1, 'a', 1, 'b', 'c'})
	f.Fuzz(func(t *testing.T, data []byte) {
		u, p, err := parseHello(data)
		if err != nil {
			return
		}
		body := appendHello(nil, string(u), string(p))
		_, again, err := parseCommand(body[frameHeaderSize(len(body)-2):])
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("parseHello(% x) = %q, %q; re-encoded % x", data, u, p, again)
		}
	})
}

// FuzzPlainServer feeds arbitrary bytes to a PLAIN Router's handshake: it
// never panics or hangs, and it accepts a peer only after a HELLO with the
// right credentials.
func FuzzPlainServer(f *testing.F) {
	good := plainHello("cicada", "s3cret")
	f.Add(byte(64), append(bytes.Clone(good), appendInitiate(nil, "DEALER", "w1")...))
	f.Add(byte(1), append(bytes.Clone(good), appendInitiate(nil, "DEALER", "")...))
	f.Add(byte(3), plainHello("cicada", "wrong"))
	f.Add(byte(64), clientHello("DEALER", "null"))
	f.Add(byte(9), append(appendGreetingMech(nil, mechPlain, false), longHeader(flagCommand, 1<<50)...))
	f.Add(byte(64), append(appendGreetingMech(nil, mechPlain, false), appendCommand(nil, "HELLO", []byte{200, 1})...))
	creds := &PlainAuth{Username: "cicada", Password: "s3cret"}
	hello := appendHello(nil, creds.Username, creds.Password)
	f.Fuzz(func(t *testing.T, chunk byte, in []byte) {
		br := bufio.NewReaderSize(&chunkReader{r: bytes.NewReader(in), n: int(chunk) + 1}, 64)
		info, err := handshakeAuth(br, io.Discard, socketRouter, "", 1<<16, creds)
		if err != nil {
			return
		}
		if !bytes.Contains(in, hello[2:]) {
			t.Fatalf("handshake accepted %+v without the credentials in % x", info, in)
		}
		if !compatible(socketRouter, info.socketType) {
			t.Fatalf("handshake accepted socket type %q", info.socketType)
		}
	})
}

// FuzzPlainClient feeds arbitrary bytes as a PLAIN server's answers to a
// Dealer's handshake: it never panics or hangs, and accepts only a peer that
// sent WELCOME and READY.
func FuzzPlainClient(f *testing.F) {
	server := appendGreetingMech(nil, mechPlain, true)
	welcome := appendCommand(nil, "WELCOME", nil)
	f.Add(byte(64), append(append(bytes.Clone(server), welcome...), appendReady(nil, "ROUTER", "")...))
	f.Add(byte(2), append(bytes.Clone(server), appendError(nil, "400")...))
	f.Add(byte(5), append(bytes.Clone(server), 0x04, 0x09, '^', 'R', 'R', 'O', 'R', 3, '4', '0', '0'))
	f.Add(byte(64), appendGreeting(nil))
	f.Fuzz(func(t *testing.T, chunk byte, in []byte) {
		br := bufio.NewReaderSize(&chunkReader{r: bytes.NewReader(in), n: int(chunk) + 1}, 64)
		info, err := handshakeAuth(br, io.Discard, socketDealer, "w", 1<<16, &PlainAuth{Username: "u", Password: "p"})
		if err != nil {
			return
		}
		if !bytes.Contains(in, welcome[2:]) || !compatible(socketDealer, info.socketType) {
			t.Fatalf("handshake accepted %+v from % x", info, in)
		}
	})
}
