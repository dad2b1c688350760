package protocol

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// MaxDepth is the deepest container nesting Decode accepts (the envelope
// array counts as level 1). Deeper payloads are rejected with ErrMalformed
// before any recursion, so hostile input cannot exhaust the stack. Locust
// messages nest at most 5 levels; custom messages rarely more.
const MaxDepth = 100

// maxInternLen and maxInterned bound the per-decoder string intern table that
// lets the master reuse request names, node ids and map keys across reports.
const (
	maxInternLen = 128
	maxInterned  = 4096
)

// decoder is the state of one Decode call: a cursor over the payload. It
// reads the msgpack wire format itself (FORMAT.md; codes from msgpcode), so
// that a value costs a few byte loads and compares rather than a call into a
// general-purpose decoder through an io.Reader. It is pooled; the intern
// table survives between calls (strings are immutable, so sharing them is
// safe).
type decoder struct {
	buf    []byte // the payload; string bytes are sliced from it, then copied
	off    int    // offset of the next unread byte of buf
	intern map[string]string
	floats []float64 // arena for the *float64 fields of the current message
	strs   []string  // arena for the *string fields of the current message
	pooled bool      // a stats report takes its memory from statsPool (DecodePooled)
	// entryDepth is the nesting the keys and ignored values of the stats
	// entry being decoded may open (statsEntry's depth).
	entryDepth int
}

var decoderPool = sync.Pool{New: func() any {
	return &decoder{intern: make(map[string]string)}
}}

// Decode parses one Locust message: the single ZeroMQ frame that holds the
// msgpack array [type, data, node_id]. Data is decoded to the typed value of
// the message type (see Message); unknown types decode to *Custom.
//
// Every error wraps ErrMalformed and names the offending field. Decode never
// panics, bounds nesting by MaxDepth and never allocates more than a small
// constant factor of len(payload), whatever the headers claim.
//
// Decode does not retain payload: the caller may reuse it at once. It is safe
// for concurrent use.
func Decode(payload []byte) (Message, error) {
	return decode(payload, false)
}

func decode(payload []byte, pooled bool) (Message, error) {
	if len(payload) == 0 {
		return Message{}, within(malformed("empty payload"), "envelope")
	}
	d := decoderPool.Get().(*decoder)
	d.pooled = pooled
	d.buf, d.off = payload, 0
	m, err := d.message()
	d.buf, d.off = nil, 0
	d.floats, d.strs = nil, nil
	if len(d.intern) > maxInterned {
		clear(d.intern)
	}
	decoderPool.Put(d)
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

func (d *decoder) message() (Message, error) {
	c, err := d.peek()
	if err != nil {
		return Message{}, within(err, "envelope")
	}
	if !isArray(c) {
		return Message{}, within(malformed("want array of 3 [type, data, node_id], got "+codeKind(c)), "envelope")
	}
	n, ok := d.headerLen()
	if !ok {
		return Message{}, within(truncated("bad array header"), "envelope")
	}
	if n != 3 {
		return Message{}, within(malformed("want array of 3 [type, data, node_id], got array of "+strconv.Itoa(n)), "envelope")
	}
	// The envelope's elements need a byte each, as any array's (arrayLen).
	if err := d.checkLen(n, 1); err != nil {
		return Message{}, within(err, "envelope")
	}
	var m Message
	if m.Type, err = d.typeName(); err != nil {
		return Message{}, within(at(err, "type"), "envelope")
	}
	if m.Data, err = d.data(m.Type); err != nil {
		return Message{}, within(err, strconv.Quote(m.Type)+" data")
	}
	if m.NodeID, err = d.string(); err != nil {
		return Message{}, within(at(err, "node_id"), "envelope")
	}
	if r := len(d.buf) - d.off; r != 0 {
		return Message{}, within(malformed(strconv.Itoa(r)+" trailing bytes after the message"), "envelope")
	}
	return m, nil
}

// typeName reads the message type, returning the package constant (no
// allocation) for the known ones.
func (d *decoder) typeName() (string, error) {
	b, err := d.strRaw()
	if err != nil {
		return "", err
	}
	// Bytes equal to a constant are valid UTF-8: only the others need the
	// check.
	switch string(b) {
	case TypeClientReady:
		return TypeClientReady, nil
	case TypeAck:
		return TypeAck, nil
	case TypeHeartbeat:
		return TypeHeartbeat, nil
	case TypeSpawn:
		return TypeSpawn, nil
	case TypeSpawning:
		return TypeSpawning, nil
	case TypeSpawningComplete:
		return TypeSpawningComplete, nil
	case TypeStats:
		return TypeStats, nil
	case TypeException:
		return TypeException, nil
	case TypeStop:
		return TypeStop, nil
	case TypeClientStopped:
		return TypeClientStopped, nil
	case TypeQuit:
		return TypeQuit, nil
	case TypeReconnect:
		return TypeReconnect, nil
	case TypeLogs:
		return TypeLogs, nil
	case TypeLocustfile:
		return TypeLocustfile, nil
	case TypeUpdateUserClass:
		return TypeUpdateUserClass, nil
	}
	return d.internValid(b)
}

// ---- low-level reading ----
//
// Each reader has an inlinable fast path for the forms Locust and cicada
// send most (fixstr, fixmap, positive fixint, float64) and a slow path for
// everything else, which also produces the errors. oracle_test.go checks
// values and error paths against the msgpack library's reading of the same
// bytes.

// truncated is the error for a header or value that runs past the end of
// the payload.
func truncated(msg string) error { return malformedCause(msg, io.ErrUnexpectedEOF) }

// peek returns the next msgpack code without consuming it.
func (d *decoder) peek() (byte, error) {
	if d.off >= len(d.buf) {
		return 0, truncated("truncated")
	}
	return d.buf[d.off], nil
}

// skipBytes advances past n bytes of the payload that the caller has checked
// are present.
func (d *decoder) skipBytes(n int) { d.off += n }

// checkLen rejects a container header claiming more elements than the rest
// of the payload can hold (each element takes at least minSize bytes), so no
// header can make the decoder allocate beyond the input size.
func (d *decoder) checkLen(n, minSize int) error {
	if n < 0 || n > (len(d.buf)-d.off)/minSize {
		return malformedCause("container of "+strconv.Itoa(n)+" elements exceeds the payload", io.ErrUnexpectedEOF)
	}
	return nil
}

// headerLen reads the header of the str, bin, map or array at the current
// position (the caller has checked the code). ok is false, with nothing
// consumed, when the header is truncated.
func (d *decoder) headerLen() (n int, ok bool) {
	b := d.buf[d.off:]
	if len(b) == 0 {
		return 0, false
	}
	var size int
	switch c := b[0]; c {
	case msgpcode.Str8, msgpcode.Bin8:
		size = 1
	case msgpcode.Str16, msgpcode.Bin16, msgpcode.Map16, msgpcode.Array16:
		size = 2
	case msgpcode.Str32, msgpcode.Bin32, msgpcode.Map32, msgpcode.Array32:
		size = 4
	default:
		switch {
		case c >= msgpcode.FixedStrLow && c <= msgpcode.FixedStrHigh:
			n = int(c & msgpcode.FixedStrMask)
		case c >= msgpcode.FixedMapLow && c <= msgpcode.FixedMapHigh:
			n = int(c & msgpcode.FixedMapMask)
		case c >= msgpcode.FixedArrayLow && c <= msgpcode.FixedArrayHigh:
			n = int(c & msgpcode.FixedArrayMask)
		default:
			return 0, false
		}
		d.off++
		return n, true
	}
	if len(b) < 1+size {
		return 0, false
	}
	switch size {
	case 1:
		n = int(b[1])
	case 2:
		n = int(binary.BigEndian.Uint16(b[1:]))
	default:
		u := binary.BigEndian.Uint32(b[1:])
		if uint64(u) > math.MaxInt>>1 {
			return 0, false
		}
		n = int(u)
	}
	d.off += 1 + size
	return n, true
}

// strRaw reads a str (or bin) and returns its bytes as a slice of the
// payload, valid only until the next Decode, without the UTF-8 check.
func (d *decoder) strRaw() ([]byte, error) {
	if p := d.off; p < len(d.buf) {
		if c := d.buf[p]; c&0xe0 == msgpcode.FixedStrLow {
			if end := p + 1 + int(c&msgpcode.FixedStrMask); end <= len(d.buf) {
				d.off = end
				return d.buf[p+1 : end : end], nil
			}
		}
	}
	return d.strRawSlow()
}

func (d *decoder) strRawSlow() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if !isStr(c) && !isBin(c) {
		return nil, malformed("want str, got " + codeKind(c))
	}
	return d.rawBytes()
}

// rawBytes reads a str or bin header whose code the caller has checked and
// returns the body as a slice of the payload.
func (d *decoder) rawBytes() ([]byte, error) {
	n, ok := d.headerLen()
	if !ok {
		return nil, truncated("bad str/bin header")
	}
	if n > len(d.buf)-d.off {
		return nil, malformedCause("str/bin of "+strconv.Itoa(n)+" bytes exceeds the payload", io.ErrUnexpectedEOF)
	}
	p := d.off
	d.off += n
	return d.buf[p : p+n : p+n], nil
}

// string reads a str (or bin holding UTF-8) as a Go string. Short strings
// are interned per decoder, so repeated names cost no allocation.
func (d *decoder) string() (string, error) {
	b, err := d.strRaw()
	if err != nil {
		return "", err
	}
	return d.internValid(b)
}

// internValid returns b as a string after checking that it is valid UTF-8.
// Only valid strings enter the intern table, so a string found there needs
// no check.
func (d *decoder) internValid(b []byte) (string, error) {
	if len(b) == 0 {
		return "", nil
	}
	if len(b) <= maxInternLen {
		if s, ok := d.intern[string(b)]; ok {
			return s, nil
		}
	}
	if !utf8.Valid(b) {
		return "", malformed("string is not valid UTF-8")
	}
	s := string(b)
	if len(b) <= maxInternLen {
		d.intern[s] = s
	}
	return s, nil
}

// stringOrNil reads a str, bin or nil; ok is false for nil.
func (d *decoder) stringOrNil() (s string, ok bool, err error) {
	if p := d.off; p < len(d.buf) && d.buf[p] == msgpcode.Nil {
		d.off = p + 1
		return "", false, nil
	}
	s, err = d.string()
	return s, err == nil, err
}

// binary reads a bin (or str) and returns a copy of its bytes; nil for nil.
func (d *decoder) binary() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		d.off++
		return nil, nil
	}
	if !isStr(c) && !isBin(c) {
		return nil, malformed("want bin, got " + codeKind(c))
	}
	b, err := d.rawBytes()
	if err != nil {
		return nil, err
	}
	return append([]byte{}, b...), nil
}

// int64 reads a number as int64: any int or uint width, or a float, which is
// truncated toward zero as Python's int() does. nil, NaN, ±Inf and values out
// of the int64 range are errors.
func (d *decoder) int64() (int64, error) {
	if v, q := uintAt(d.buf, d.off); q != 0 {
		d.off = q
		return v, nil
	}
	return d.int64Slow()
}

func (d *decoder) int64Slow() (int64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	b := d.buf[d.off+1:]
	switch c {
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		n, size, ok := fixedInt(c, b)
		if !ok {
			return 0, truncated("bad integer")
		}
		d.off += 1 + size
		return n, nil
	case msgpcode.Uint64:
		if len(b) < 8 {
			return 0, truncated("bad uint64")
		}
		u := binary.BigEndian.Uint64(b)
		d.off += 9
		if u > math.MaxInt64 {
			return 0, malformed("integer " + strconv.FormatUint(u, 10) + " overflows int64")
		}
		return int64(u), nil
	case msgpcode.Float:
		if len(b) < 4 {
			return 0, truncated("bad float")
		}
		d.off += 5
		return floatToInt(float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
	case msgpcode.Double:
		if len(b) < 8 {
			return 0, truncated("bad float")
		}
		d.off += 9
		return floatToInt(math.Float64frombits(binary.BigEndian.Uint64(b)))
	}
	if isFixInt(c) {
		d.off++
		return int64(int8(c)), nil
	}
	return 0, malformed("want integer, got " + codeKind(c))
}

// fixedInt decodes the int of code c (uint8-32, int8-64) from b, the bytes
// after the code; size is the number of bytes used, ok is false when b is
// too short.
func fixedInt(c byte, b []byte) (n int64, size int, ok bool) {
	switch c {
	case msgpcode.Uint8:
		if len(b) >= 1 {
			return int64(b[0]), 1, true
		}
	case msgpcode.Int8:
		if len(b) >= 1 {
			return int64(int8(b[0])), 1, true
		}
	case msgpcode.Uint16:
		if len(b) >= 2 {
			return int64(binary.BigEndian.Uint16(b)), 2, true
		}
	case msgpcode.Int16:
		if len(b) >= 2 {
			return int64(int16(binary.BigEndian.Uint16(b))), 2, true
		}
	case msgpcode.Uint32:
		if len(b) >= 4 {
			return int64(binary.BigEndian.Uint32(b)), 4, true
		}
	case msgpcode.Int32:
		if len(b) >= 4 {
			return int64(int32(binary.BigEndian.Uint32(b))), 4, true
		}
	case msgpcode.Int64:
		if len(b) >= 8 {
			return int64(binary.BigEndian.Uint64(b)), 8, true
		}
	}
	return 0, 0, false
}

// floatToInt truncates f toward zero, like Python's int(f).
func floatToInt(f float64) (int64, error) {
	if math.IsNaN(f) || f >= 0x1p63 || f < -0x1p63 {
		return 0, malformed("float " + strconv.FormatFloat(f, 'g', -1, 64) + " is not an int64")
	}
	return int64(f), nil
}

// float64 reads any int or uint width, float32 or float64 as a float64.
// nil is an error.
func (d *decoder) float64() (float64, error) {
	if p := d.off; p+9 <= len(d.buf) && d.buf[p] == msgpcode.Double {
		d.off = p + 9
		return math.Float64frombits(binary.BigEndian.Uint64(d.buf[p+1:])), nil
	}
	return d.float64Slow()
}

func (d *decoder) float64Slow() (float64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	b := d.buf[d.off+1:]
	switch c {
	case msgpcode.Double:
		if len(b) < 8 {
			return 0, truncated("bad number")
		}
		d.off += 9
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case msgpcode.Float:
		if len(b) < 4 {
			return 0, truncated("bad number")
		}
		d.off += 5
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		n, size, ok := fixedInt(c, b)
		if !ok {
			// The msgpack library's text for this case, kept as it was.
			return 0, malformedCause("bad number", errors.New("msgpack: invalid code="+strconv.FormatUint(uint64(c), 16)+" decoding float32"))
		}
		d.off += 1 + size
		return float64(n), nil
	case msgpcode.Uint64:
		if len(b) < 8 {
			return 0, truncated("bad uint64")
		}
		d.off += 9
		return float64(binary.BigEndian.Uint64(b)), nil
	}
	if isFixInt(c) {
		d.off++
		return float64(int8(c)), nil
	}
	return 0, malformed("want number, got " + codeKind(c))
}

// floatOrNil reads a number or nil. A non-nil result points into a per-message
// arena, so a stats report costs one allocation for all its optional floats.
func (d *decoder) floatOrNil() (*float64, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		d.off++
		return nil, nil
	}
	if !isInt(c) && !isFloat(c) {
		return nil, malformed("want number or nil, got " + codeKind(c))
	}
	f, err := d.float64()
	if err != nil {
		return nil, err
	}
	if len(d.floats) == cap(d.floats) {
		d.floats = make([]float64, 0, max(64, 2*cap(d.floats)))
	}
	d.floats = append(d.floats, f)
	return &d.floats[len(d.floats)-1], nil
}

// mapLen reads a map header (nil is an error) and checks it against the
// remaining payload.
func (d *decoder) mapLen() (int, error) {
	if p := d.off; p < len(d.buf) {
		if c := d.buf[p]; c&0xf0 == msgpcode.FixedMapLow {
			if n := int(c & msgpcode.FixedMapMask); n <= (len(d.buf)-p-1)/2 {
				d.off = p + 1
				return n, nil
			}
		}
	}
	return d.mapLenSlow()
}

func (d *decoder) mapLenSlow() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !isMap(c) {
		return 0, malformed("want map, got " + codeKind(c))
	}
	n, ok := d.headerLen()
	if !ok {
		return 0, truncated("bad map header")
	}
	return n, d.checkLen(n, 2)
}

// arrayLen reads an array header (nil is an error) and checks it against the
// remaining payload.
func (d *decoder) arrayLen() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !isArray(c) {
		return 0, malformed("want array, got " + codeKind(c))
	}
	n, ok := d.headerLen()
	if !ok {
		return 0, truncated("bad array header")
	}
	return n, d.checkLen(n, 1)
}

// key reads a map key where a str is expected. ok is false (and the key has
// been consumed, with depth levels of nesting allowed, as skip) when the key
// is some other type: typed decoders ignore such entries, like Locust's dict
// lookups do. Keys are compared, not kept, so
// they skip the UTF-8 check: a key that matches a known name is ASCII, and
// any other key is skipped.
func (d *decoder) key(depth int) (k []byte, ok bool, err error) {
	if p := d.off; p < len(d.buf) {
		if c := d.buf[p]; c&0xe0 == msgpcode.FixedStrLow {
			if end := p + 1 + int(c&msgpcode.FixedStrMask); end <= len(d.buf) {
				d.off = end
				return d.buf[p+1 : end : end], true, nil
			}
		}
	}
	return d.keySlow(depth)
}

func (d *decoder) keySlow(depth int) (k []byte, ok bool, err error) {
	c, err := d.peek()
	if err != nil {
		return nil, false, err
	}
	if !isStr(c) && !isBin(c) {
		return nil, false, d.skip(depth)
	}
	k, err = d.rawBytes()
	return k, err == nil, err
}

// skip consumes one value of any type, recursing at most depth levels.
//
// The depth arguments of skip, key and the typed decoders all count the
// same way: a value passed depth may open that many more container levels,
// so the children of a map or array at nesting level L (the envelope is
// level 1) get MaxDepth-L, and a payload is refused exactly when it nests
// deeper than MaxDepth, wherever the deepest value is.
func (d *decoder) skip(depth int) error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	switch {
	case isMap(c) || isArray(c):
		if depth <= 0 {
			return malformed("nesting deeper than " + strconv.Itoa(MaxDepth))
		}
		var n int
		if isMap(c) {
			n, err = d.mapLen()
			n *= 2
		} else {
			n, err = d.arrayLen()
		}
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := d.skip(depth - 1); err != nil {
				return err
			}
		}
		return nil
	case isStr(c) || isBin(c):
		_, err := d.rawBytes()
		return err
	case isExt(c) || c == 0xc1:
		return malformed("msgpack " + codeKind(c) + " is not allowed")
	}
	// A scalar: nil, bool, int or float.
	var size int
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		size = 1
	case msgpcode.Uint16, msgpcode.Int16:
		size = 2
	case msgpcode.Uint32, msgpcode.Int32, msgpcode.Float:
		size = 4
	case msgpcode.Uint64, msgpcode.Int64, msgpcode.Double:
		size = 8
	}
	if len(d.buf)-d.off-1 < size {
		return truncated("truncated " + codeKind(c))
	}
	d.off += 1 + size
	return nil
}

// ---- msgpack code classes ----

func isFixInt(c byte) bool { return c <= msgpcode.PosFixedNumHigh || c >= msgpcode.NegFixedNumLow }
func isInt(c byte) bool {
	return isFixInt(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Uint64) || (c >= msgpcode.Int8 && c <= msgpcode.Int64)
}
func isFloat(c byte) bool { return c == msgpcode.Float || c == msgpcode.Double }
func isStr(c byte) bool {
	return (c >= msgpcode.FixedStrLow && c <= msgpcode.FixedStrHigh) || c == msgpcode.Str8 || c == msgpcode.Str16 || c == msgpcode.Str32
}
func isBin(c byte) bool { return c == msgpcode.Bin8 || c == msgpcode.Bin16 || c == msgpcode.Bin32 }
func isMap(c byte) bool {
	return (c >= msgpcode.FixedMapLow && c <= msgpcode.FixedMapHigh) || c == msgpcode.Map16 || c == msgpcode.Map32
}
func isArray(c byte) bool {
	return (c >= msgpcode.FixedArrayLow && c <= msgpcode.FixedArrayHigh) || c == msgpcode.Array16 || c == msgpcode.Array32
}
func isExt(c byte) bool {
	return (c >= msgpcode.FixExt1 && c <= msgpcode.FixExt16) || (c >= msgpcode.Ext8 && c <= msgpcode.Ext32)
}

// codeKind names the msgpack type of a code for error messages.
func codeKind(c byte) string {
	switch {
	case c == msgpcode.Nil:
		return "nil"
	case c == msgpcode.True || c == msgpcode.False:
		return "bool"
	case isInt(c):
		return "int"
	case isFloat(c):
		return "float"
	case isStr(c):
		return "str"
	case isBin(c):
		return "bin"
	case isMap(c):
		return "map"
	case isArray(c):
		return "array"
	case isExt(c):
		return "ext"
	}
	return "reserved code 0x" + strconv.FormatUint(uint64(c), 16)
}
