package protocol

// refdecode_test.go is the msgpack-library-based decoder that the
// hand-rolled cursor decoder replaced, kept verbatim (renamed, without the
// pooled branches) as the reference for differential tests: the new decoder
// must give the same values and the same error text on every input.

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// decoder is the state of one Decode call. It is pooled; the intern table
// survives between calls (strings are immutable, so sharing them is safe).
type refDecoder struct {
	dec    *msgpack.Decoder
	rd     bytes.Reader
	buf    []byte // the payload; string bytes are sliced from it, then copied
	intern map[string]string
	floats []float64 // arena for the *float64 fields of the current message
	strs   []string  // arena for the *string fields of the current message
}

var refDecoderPool = sync.Pool{New: func() any {
	return &refDecoder{dec: msgpack.NewDecoder(nil), intern: make(map[string]string)}
}}

func refDecode(payload []byte) (Message, error) {
	if len(payload) == 0 {
		return Message{}, within(malformed("empty payload"), "envelope")
	}
	d := refDecoderPool.Get().(*refDecoder)
	d.buf = payload
	d.rd.Reset(payload)
	d.dec.Reset(&d.rd)
	m, err := d.message()
	d.buf = nil
	d.rd.Reset(nil)
	d.floats, d.strs = nil, nil
	if len(d.intern) > maxInterned {
		clear(d.intern)
	}
	refDecoderPool.Put(d)
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

func (d *refDecoder) message() (Message, error) {
	c, err := d.peek()
	if err != nil {
		return Message{}, within(err, "envelope")
	}
	if !isArray(c) {
		return Message{}, within(malformed("want array of 3 [type, data, node_id], got "+codeKind(c)), "envelope")
	}
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return Message{}, within(malformedCause("bad array header", err), "envelope")
	}
	if n != 3 {
		return Message{}, within(malformed("want array of 3 [type, data, node_id], got array of "+strconv.Itoa(n)), "envelope")
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
	if r := d.rd.Len(); r != 0 {
		return Message{}, within(malformed(strconv.Itoa(r)+" trailing bytes after the message"), "envelope")
	}
	return m, nil
}

// typeName reads the message type, returning the package constant (no
// allocation) for the known ones.
func (d *refDecoder) typeName() (string, error) {
	b, err := d.stringBytes()
	if err != nil {
		return "", err
	}
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
	return d.internBytes(b), nil
}

// ---- low-level reading ----

// pos is the offset of the next unread byte of d.buf.
func (d *refDecoder) pos() int { return len(d.buf) - d.rd.Len() }

// peek returns the next msgpack code without consuming it.
func (d *refDecoder) peek() (byte, error) {
	p := d.pos()
	if p >= len(d.buf) {
		return 0, malformedCause("truncated", io.ErrUnexpectedEOF)
	}
	return d.buf[p], nil
}

// skipBytes advances past n bytes of the payload that the caller has checked
// are present.
func (d *refDecoder) skipBytes(n int) {
	_, _ = d.rd.Seek(int64(n), io.SeekCurrent)
}

// checkLen rejects a container header claiming more elements than the rest
// of the payload can hold (each element takes at least minSize bytes), so no
// header can make the decoder allocate beyond the input size.
func (d *refDecoder) checkLen(n, minSize int) error {
	if n < 0 || n > d.rd.Len()/minSize {
		return malformedCause("container of "+strconv.Itoa(n)+" elements exceeds the payload", io.ErrUnexpectedEOF)
	}
	return nil
}

// stringBytes reads a str (or bin) and returns its bytes as a slice of the
// payload, valid only until the next Decode. The bytes must be valid UTF-8:
// Python's unpacker (raw=False) rejects anything else.
func (d *refDecoder) stringBytes() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if !isStr(c) && !isBin(c) {
		return nil, malformed("want str, got " + codeKind(c))
	}
	b, err := d.rawBytes()
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, malformed("string is not valid UTF-8")
	}
	return b, nil
}

// rawBytes reads a str or bin header whose code the caller has checked and
// returns the body as a slice of the payload.
func (d *refDecoder) rawBytes() ([]byte, error) {
	n, ok := d.fastLen()
	if !ok {
		var err error
		if n, err = d.dec.DecodeBytesLen(); err != nil {
			return nil, malformedCause("bad str/bin header", err)
		}
	}
	if n > d.rd.Len() {
		return nil, malformedCause("str/bin of "+strconv.Itoa(n)+" bytes exceeds the payload", io.ErrUnexpectedEOF)
	}
	p := d.pos()
	d.skipBytes(n)
	return d.buf[p : p+n : p+n], nil
}

// fastLen reads the header of the str, bin, map or array at the current
// position (the caller has checked the code) straight from the payload. ok
// is false, with nothing consumed, when the header is truncated (or the code
// is none of these): the caller then asks the msgpack decoder, for its error.
func (d *refDecoder) fastLen() (n int, ok bool) {
	b := d.buf[d.pos():]
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
		d.skipBytes(1)
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
	d.skipBytes(1 + size)
	return n, true
}

// string reads a str (or bin holding UTF-8) as a Go string. Short strings
// are interned per decoder, so repeated names cost no allocation.
func (d *refDecoder) string() (string, error) {
	b, err := d.stringBytes()
	if err != nil {
		return "", err
	}
	return d.internBytes(b), nil
}

// stringOrNil reads a str, bin or nil; ok is false for nil.
func (d *refDecoder) stringOrNil() (s string, ok bool, err error) {
	if c, err := d.peek(); err != nil {
		return "", false, err
	} else if c == msgpcode.Nil {
		d.skipBytes(1)
		return "", false, nil
	}
	s, err = d.string()
	return s, err == nil, err
}

func (d *refDecoder) internBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	d.intern[s] = s
	return s
}

// binary reads a bin (or str) and returns a copy of its bytes; nil for nil.
func (d *refDecoder) binary() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		d.skipBytes(1)
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
func (d *refDecoder) int64() (int64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case isFixInt(c):
		d.skipBytes(1)
		return int64(int8(c)), nil
	case c == msgpcode.Uint64:
		u, err := d.dec.DecodeUint64()
		if err != nil {
			return 0, malformedCause("bad uint64", err)
		}
		if u > math.MaxInt64 {
			return 0, malformed("integer " + strconv.FormatUint(u, 10) + " overflows int64")
		}
		return int64(u), nil
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint32 || c >= msgpcode.Int8 && c <= msgpcode.Int64:
		// The fixed-width ints, read straight from the payload (the
		// master's stats maps are made of them).
		if n, ok := d.fixedInt(c); ok {
			return n, nil
		}
		n, err := d.dec.DecodeInt64()
		if err != nil {
			return 0, malformedCause("bad integer", err)
		}
		return n, nil
	case isInt(c):
		n, err := d.dec.DecodeInt64()
		if err != nil {
			return 0, malformedCause("bad integer", err)
		}
		return n, nil
	case c == msgpcode.Float || c == msgpcode.Double:
		f, err := d.dec.DecodeFloat64()
		if err != nil {
			return 0, malformedCause("bad float", err)
		}
		return floatToInt(f)
	}
	return 0, malformed("want integer, got " + codeKind(c))
}

// fixedInt reads the int of code c (uint8-32, int8-64) from the payload;
// ok is false, with nothing consumed, when the payload is too short.
func (d *refDecoder) fixedInt(c byte) (n int64, ok bool) {
	p := d.pos() + 1
	b := d.buf
	var size int
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		size = 1
	case msgpcode.Uint16, msgpcode.Int16:
		size = 2
	case msgpcode.Uint32, msgpcode.Int32:
		size = 4
	default:
		size = 8
	}
	if len(b)-p < size {
		return 0, false
	}
	b = b[p : p+size]
	switch c {
	case msgpcode.Uint8:
		n = int64(b[0])
	case msgpcode.Int8:
		n = int64(int8(b[0]))
	case msgpcode.Uint16:
		n = int64(binary.BigEndian.Uint16(b))
	case msgpcode.Int16:
		n = int64(int16(binary.BigEndian.Uint16(b)))
	case msgpcode.Uint32:
		n = int64(binary.BigEndian.Uint32(b))
	case msgpcode.Int32:
		n = int64(int32(binary.BigEndian.Uint32(b)))
	default:
		n = int64(binary.BigEndian.Uint64(b))
	}
	d.skipBytes(1 + size)
	return n, true
}

// float64 reads any int or uint width, float32 or float64 as a float64.
// nil is an error.
func (d *refDecoder) float64() (float64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case isFixInt(c):
		d.skipBytes(1)
		return float64(int8(c)), nil
	case c == msgpcode.Double || c == msgpcode.Float:
		// Read straight from the payload (most stats fields are doubles).
		if p := d.pos() + 1; c == msgpcode.Double && len(d.buf)-p >= 8 {
			d.skipBytes(9)
			return math.Float64frombits(binary.BigEndian.Uint64(d.buf[p:])), nil
		} else if c == msgpcode.Float && len(d.buf)-p >= 4 {
			d.skipBytes(5)
			return float64(math.Float32frombits(binary.BigEndian.Uint32(d.buf[p:]))), nil
		}
		f, err := d.dec.DecodeFloat64()
		if err != nil {
			return 0, malformedCause("bad number", err)
		}
		return f, nil
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint32 || c >= msgpcode.Int8 && c <= msgpcode.Int64:
		if n, ok := d.fixedInt(c); ok {
			return float64(n), nil
		}
		f, err := d.dec.DecodeFloat64()
		if err != nil {
			return 0, malformedCause("bad number", err)
		}
		return f, nil
	case c == msgpcode.Uint64:
		u, err := d.dec.DecodeUint64()
		if err != nil {
			return 0, malformedCause("bad uint64", err)
		}
		return float64(u), nil
	case isInt(c) || c == msgpcode.Float || c == msgpcode.Double:
		f, err := d.dec.DecodeFloat64()
		if err != nil {
			return 0, malformedCause("bad number", err)
		}
		return f, nil
	}
	return 0, malformed("want number, got " + codeKind(c))
}

// floatOrNil reads a number or nil. A non-nil result points into a per-message
// arena, so a stats report costs one allocation for all its optional floats.
func (d *refDecoder) floatOrNil() (*float64, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		d.skipBytes(1)
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
func (d *refDecoder) mapLen() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !isMap(c) {
		return 0, malformed("want map, got " + codeKind(c))
	}
	n, ok := d.fastLen()
	if !ok {
		if n, err = d.dec.DecodeMapLen(); err != nil {
			return 0, malformedCause("bad map header", err)
		}
	}
	return n, d.checkLen(n, 2)
}

// arrayLen reads an array header (nil is an error) and checks it against the
// remaining payload.
func (d *refDecoder) arrayLen() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !isArray(c) {
		return 0, malformed("want array, got " + codeKind(c))
	}
	n, ok := d.fastLen()
	if !ok {
		if n, err = d.dec.DecodeArrayLen(); err != nil {
			return 0, malformedCause("bad array header", err)
		}
	}
	return n, d.checkLen(n, 1)
}

// key reads a map key where a str is expected. ok is false (and the key has
// been consumed) when the key is some other type: typed decoders ignore such
// entries, like Locust's dict lookups do.
func (d *refDecoder) key() (k []byte, ok bool, err error) {
	c, err := d.peek()
	if err != nil {
		return nil, false, err
	}
	if !isStr(c) && !isBin(c) {
		return nil, false, d.skip(MaxDepth - 2)
	}
	// Keys are compared, not kept, so they skip the UTF-8 check: a key that
	// matches a known name is ASCII, and any other key is skipped.
	k, err = d.rawBytes()
	return k, err == nil, err
}

// skip consumes one value of any type, recursing at most depth levels. It
// does not use msgpack.Decoder.Skip, which has no depth limit.
func (d *refDecoder) skip(depth int) error {
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
	if err := d.dec.Skip(); err != nil {
		return malformedCause("truncated "+codeKind(c), err)
	}
	return nil
}

// data decodes the data element of a message of type typ (locust-protocol.md
// §3). Data depth starts at MaxDepth-1: the envelope is level 1.
func (d *refDecoder) data(typ string) (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	isNil := c == msgpcode.Nil
	switch typ {
	case TypeClientReady:
		return d.clientReady(c)
	case TypeAck:
		return d.ack(isNil)
	case TypeHeartbeat:
		if isNil {
			d.skipBytes(1)
			return &MasterHeartbeat{}, nil
		}
		return d.heartbeat()
	case TypeSpawn:
		return d.spawn()
	case TypeSpawningComplete:
		return d.spawningComplete()
	case TypeStats:
		return d.statsReport()
	case TypeException:
		return d.exception()
	case TypeLogs:
		return d.logs()
	case TypeLocustfile:
		if isNil {
			d.skipBytes(1)
			return &Locustfile{}, nil
		}
		m, err := d.stringKeyedMap(MaxDepth - 1)
		if err != nil {
			return nil, err
		}
		return &Locustfile{Data: m}, nil
	case TypeUpdateUserClass:
		m, err := d.stringKeyedMap(MaxDepth - 1)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			m = nil
		}
		return &UpdateUserClass{Data: m}, nil
	case TypeSpawning, TypeStop, TypeClientStopped, TypeQuit, TypeReconnect:
		if isNil {
			d.skipBytes(1)
			return nil, nil
		}
	}
	// Unknown types, and known nil-data types that carry data anyway, pass
	// through as plain values.
	v, err := d.value(MaxDepth - 1)
	if err != nil {
		return nil, err
	}
	return &Custom{Data: v}, nil
}

// stringKeyedMap decodes a map whose keys must all be strings.
func (d *refDecoder) stringKeyedMap(depth int) (map[string]any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if !isMap(c) {
		return nil, malformed("want map, got " + codeKind(c))
	}
	v, err := d.plainMap(depth - 1)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed("want map with str keys")
	}
	return m, nil
}

func (d *refDecoder) clientReady(c byte) (*ClientReady, error) {
	switch {
	case isStr(c) || isBin(c):
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return &ClientReady{Version: s}, nil
	case isInt(c) || isFloat(c):
		n, err := d.float64()
		if err != nil {
			return nil, err
		}
		if n == -1 {
			return &ClientReady{VersionSkipCheck: true}, nil
		}
		return nil, malformed("want version str or -1, got " + strconv.FormatFloat(n, 'g', -1, 64))
	}
	return nil, malformed("want version str or -1, got " + codeKind(c))
}

func (d *refDecoder) ack(isNil bool) (*Ack, error) {
	a := &Ack{Index: -1}
	if isNil {
		d.skipBytes(1)
		return a, nil
	}
	err := d.fields(func(k []byte) (bool, error) {
		switch string(k) {
		case "index":
			i, err := d.int64()
			a.Index = i
			return true, err
		case "cicada":
			s, err := d.string()
			a.Cicada = s
			return true, err
		}
		return false, nil
	})
	return a, err
}

// fields iterates over a str-keyed map, calling f for each str key. f
// returns handled=false to have the value skipped. Entries whose key is not
// a str are skipped. Errors get the key as path element.
func (d *refDecoder) fields(f func(k []byte) (handled bool, err error)) error {
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		k, ok, err := d.key()
		if err != nil {
			return at(err, "[key "+strconv.Itoa(i)+"]")
		}
		handled := false
		if ok {
			if handled, err = f(k); err != nil {
				return at(err, string(k))
			}
		}
		if !handled {
			if err := d.skip(MaxDepth - 2); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
		}
	}
	return nil
}

func (d *refDecoder) heartbeat() (*Heartbeat, error) {
	h := &Heartbeat{MemoryUsage: -1}
	var seen uint8
	err := d.fields(func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "state":
			seen |= 1
			h.State, err = d.string()
		case "current_cpu_usage":
			seen |= 2
			h.CPUUsage, err = d.float64()
		case "current_memory_usage":
			if c, _ := d.peek(); c == msgpcode.Nil {
				d.skipBytes(1)
				h.MemoryUsage = -1
			} else {
				h.MemoryUsage, err = d.int64()
			}
		case KeyCicadaConnections:
			if c, _ := d.peek(); c == msgpcode.Nil {
				d.skipBytes(1)
			} else {
				h.Connections, err = d.connCounters()
			}
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case seen&1 == 0:
		return nil, missing("state")
	case seen&2 == 0:
		return nil, missing("current_cpu_usage")
	}
	return h, nil
}

func (d *refDecoder) spawn() (*Spawn, error) {
	s := &Spawn{}
	var seen uint8
	err := d.fields(func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "timestamp":
			seen |= 1
			s.Timestamp, err = d.float64()
		case "user_classes_count":
			seen |= 2
			s.UserClassesCount, err = d.strIntMap()
		case "host":
			seen |= 4
			var h string
			var ok bool
			if h, ok, err = d.stringOrNil(); ok {
				s.Host = &h
			}
		case "stop_timeout":
			seen |= 8
			s.StopTimeout, err = d.floatOrNil()
		case "parsed_options":
			seen |= 16
			s.ParsedOptions, err = d.stringKeyedMap(MaxDepth - 2)
			if len(s.ParsedOptions) == 0 {
				s.ParsedOptions = nil
			}
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	for i, k := range [...]string{"timestamp", "user_classes_count", "host", "stop_timeout", "parsed_options"} {
		if seen&(1<<i) == 0 {
			return nil, missing(k)
		}
	}
	return s, nil
}

func (d *refDecoder) spawningComplete() (any, error) {
	var classes map[string]int64
	var hasClasses, hasCount bool
	count := int64(-1)
	err := d.fields(func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "user_classes_count":
			hasClasses = true
			classes, err = d.strIntMap()
		case "user_count":
			hasCount = true
			count, err = d.int64()
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case hasClasses:
		return &SpawningComplete{UserClassesCount: classes, UserCount: count}, nil
	case hasCount:
		return &MasterSpawningComplete{UserCount: count}, nil
	}
	return nil, missing("user_classes_count")
}

// strIntMap decodes a map of str → int (user_classes_count). An empty map
// decodes to nil.
func (d *refDecoder) strIntMap() (map[string]int64, error) {
	return d.strIntMapInto()
}

// strIntMapInto is strIntMap filling reuse's map when reuse is not nil.
func (d *refDecoder) strIntMapInto() (map[string]int64, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	m := make(map[string]int64, n)
	for i := 0; i < n; i++ {
		k, err := d.string()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		v, err := d.int64()
		if err != nil {
			return nil, at(err, "["+strconv.Quote(k)+"]")
		}
		m[k] = v
	}
	return m, nil
}

func (d *refDecoder) exception() (*Exception, error) {
	x := &Exception{}
	var seen uint8
	err := d.fields(func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "msg":
			seen |= 1
			x.Msg, err = d.string()
		case "traceback":
			seen |= 2
			x.Traceback, err = d.string()
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case seen&1 == 0:
		return nil, missing("msg")
	case seen&2 == 0:
		return nil, missing("traceback")
	}
	return x, nil
}

func (d *refDecoder) logs() (*Logs, error) {
	l := &Logs{}
	var seen uint8
	err := d.fields(func(k []byte) (bool, error) {
		switch string(k) {
		case "worker_id":
			seen |= 1
			var err error
			l.WorkerID, err = d.string()
			return true, err
		case "logs":
			seen |= 2
			n, err := d.arrayLen()
			if err != nil {
				return true, err
			}
			if n > 0 {
				l.Logs = make([]string, n)
			}
			for i := range l.Logs {
				if l.Logs[i], err = d.string(); err != nil {
					return true, at(err, "["+strconv.Itoa(i)+"]")
				}
			}
			return true, nil
		}
		return false, nil
	})
	switch {
	case err != nil:
		return nil, err
	case seen&1 == 0:
		return nil, missing("worker_id")
	case seen&2 == 0:
		return nil, missing("logs")
	}
	return l, nil
}

// The stats decoder is the master's hot path (one report per worker every
// 3 s, thousands of workers), so it walks the map keys itself instead of
// going through fields and closures, and compares keys as payload slices.

// statsReport decodes the data of a stats message (locust-protocol.md §6).
// Required keys: stats, stats_total, errors, user_classes_count (Locust's
// master reads all four); user_count is optional (-1 when absent).
func (d *refDecoder) statsReport() (*StatsReport, error) {
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	r := &StatsReport{UserCount: -1}
	var seen uint8
	for i := 0; i < n; i++ {
		k, ok, err := d.key()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		if !ok {
			if err := d.skip(MaxDepth - 2); err != nil {
				return nil, at(err, "["+strconv.Itoa(i)+"]")
			}
			continue
		}
		switch string(k) {
		case "stats":
			seen |= 1
			err = d.statsEntries(r)
		case "stats_total":
			seen |= 2
			err = d.statsEntry(&r.Total)
		case "errors":
			seen |= 4
			r.Errors, err = d.statsErrors()
		case "user_classes_count":
			seen |= 8
			r.UserClassesCount, err = d.strIntMap()
		case "user_count":
			r.UserCount, err = d.int64()
		default:
			err = d.skip(MaxDepth - 2)
		}
		if err != nil {
			return nil, at(err, string(k))
		}
	}
	for i, k := range [...]string{"stats", "stats_total", "errors", "user_classes_count"} {
		if seen&(1<<i) == 0 {
			return nil, missing(k)
		}
	}
	return r, nil
}

func (d *refDecoder) statsEntries(r *StatsReport) error {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return err
	}
	r.Stats = make([]StatsEntry, n)
	for i := range r.Stats {
		if err := d.statsEntry(&r.Stats[i]); err != nil {
			return at(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return nil
}

// statsEntry decodes one StatsEntry. Locust's master copies only the keys it
// knows and keeps a fresh entry's defaults for the others; likewise only
// name, method and start_time are required here (Locust defaults start_time
// to "now", which a codec cannot know). Unknown keys are ignored. A non-nil
// em lends its maps and buffer.
func (d *refDecoder) statsEntry(s *StatsEntry) error {
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	var seen uint8
	for i := 0; i < n; i++ {
		k, ok, err := d.key()
		if err != nil {
			return at(err, "[key "+strconv.Itoa(i)+"]")
		}
		if !ok {
			if err := d.skip(MaxDepth - 3); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
			continue
		}
		switch string(k) {
		case "name":
			seen |= 1
			s.Name, _, err = d.stringOrNil()
		case "method":
			seen |= 2
			var m string
			var ok bool
			if m, ok, err = d.stringOrNil(); ok {
				s.Method = &m
			}
		case "start_time":
			seen |= 4
			s.StartTime, err = d.float64()
		case "last_request_timestamp":
			s.LastRequestTimestamp, err = d.floatOrNil()
		case "num_requests":
			s.NumRequests, err = d.int64()
		case "num_none_requests":
			s.NumNoneRequests, err = d.int64()
		case "num_failures":
			s.NumFailures, err = d.int64()
		case "total_response_time":
			s.TotalResponseTime, err = d.float64()
		case "max_response_time":
			s.MaxResponseTime, err = d.float64()
		case "min_response_time":
			s.MinResponseTime, err = d.floatOrNil()
		case "total_content_length":
			s.TotalContentLength, err = d.int64()
		case "response_times":
			s.ResponseTimes, err = d.intIntMap()
		case "num_reqs_per_sec":
			s.NumReqsPerSec, err = d.intIntMap()
		case "num_fail_per_sec":
			s.NumFailPerSec, err = d.intIntMap()
		case KeyCicadaLatency:
			s.Exact, err = d.binary()
		default:
			err = d.skip(MaxDepth - 3)
		}
		if err != nil {
			return at(err, string(k))
		}
	}
	switch {
	case seen&1 == 0:
		return missing("name")
	case seen&2 == 0:
		return missing("method")
	case seen&4 == 0:
		return missing("start_time")
	}
	return nil
}

// intIntMap decodes a stats map (response_times, num_reqs_per_sec,
// num_fail_per_sec). Keys may be any int width or a float (Locust 2.12.1
// sends 140.0), truncated toward zero; duplicate keys keep the last value,
// as a Python dict does. An empty map decodes to nil. A non-nil reuse lends
// its map.
func (d *refDecoder) intIntMap() (map[int64]int64, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	m := make(map[int64]int64, n)
	for i := 0; i < n; i++ {
		k, err := d.int64()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		v, err := d.int64()
		if err != nil {
			return nil, at(err, "["+strconv.FormatInt(k, 10)+"]")
		}
		m[k] = v
	}
	return m, nil
}

// statsErrors decodes the errors map: key → {name, method, error,
// occurrences[, first_seen, last_seen]}. An empty map decodes to nil. A
// non-nil reuse lends its map.
func (d *refDecoder) statsErrors() (map[string]StatsError, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	m := make(map[string]StatsError, n)
	for i := 0; i < n; i++ {
		k, err := d.string()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		var se StatsError
		if err := d.statsError(&se); err != nil {
			return nil, at(err, "["+strconv.Quote(k)+"]")
		}
		m[k] = se
	}
	return m, nil
}

// statsError decodes one error row. name, method, error and occurrences are
// required (Locust's StatsError.unserialize indexes them); name, method and
// error may be nil, read as "".
func (d *refDecoder) statsError(se *StatsError) error {
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	var seen uint8
	for i := 0; i < n; i++ {
		k, ok, err := d.key()
		if err != nil {
			return at(err, "[key "+strconv.Itoa(i)+"]")
		}
		if !ok {
			if err := d.skip(MaxDepth - 4); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
			continue
		}
		switch string(k) {
		case "name":
			seen |= 1
			se.Name, _, err = d.stringOrNil()
		case "method":
			seen |= 2
			se.Method, _, err = d.stringOrNil()
		case "error":
			seen |= 4
			se.Error, _, err = d.stringOrNil()
		case "occurrences":
			seen |= 8
			se.Occurrences, err = d.int64()
		case "first_seen":
			se.FirstSeen, err = d.floatOrNil()
		case "last_seen":
			se.LastSeen, err = d.floatOrNil()
		default:
			err = d.skip(MaxDepth - 4)
		}
		if err != nil {
			return at(err, string(k))
		}
	}
	for i, k := range [...]string{"name", "method", "error", "occurrences"} {
		if seen&(1<<i) == 0 {
			return missing(k)
		}
	}
	return nil
}

// value decodes one plain value; depth is how many more container levels
// may be opened.
func (d *refDecoder) value(depth int) (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case c == msgpcode.Nil:
		d.skipBytes(1)
		return nil, nil
	case c == msgpcode.True || c == msgpcode.False:
		d.skipBytes(1)
		return c == msgpcode.True, nil
	case c == msgpcode.Uint64:
		u, err := d.dec.DecodeUint64()
		if err != nil {
			return nil, malformedCause("bad uint64", err)
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case isInt(c):
		return d.int64()
	case isFloat(c):
		return d.float64()
	case isStr(c):
		return d.string()
	case isBin(c):
		return d.binary()
	case isArray(c):
		if depth <= 0 {
			return nil, malformed("nesting deeper than " + strconv.Itoa(MaxDepth))
		}
		n, err := d.arrayLen()
		if err != nil {
			return nil, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = d.value(depth - 1); err != nil {
				return nil, at(err, "["+strconv.Itoa(i)+"]")
			}
		}
		return a, nil
	case isMap(c):
		if depth <= 0 {
			return nil, malformed("nesting deeper than " + strconv.Itoa(MaxDepth))
		}
		return d.plainMap(depth - 1)
	}
	return nil, malformed("msgpack " + codeKind(c) + " is not allowed")
}

// plainMap decodes a map to map[string]any, switching to map[any]any at
// the first key that is not a string.
func (d *refDecoder) plainMap(depth int) (any, error) {
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	sm := make(map[string]any, n)
	var am map[any]any
	for i := 0; i < n; i++ {
		c, err := d.peek()
		if err != nil {
			return nil, err
		}
		var sk string
		var ak any
		if isStr(c) || isBin(c) {
			if sk, err = d.string(); err != nil {
				return nil, at(err, "[key "+strconv.Itoa(i)+"]")
			}
			ak = sk
		} else {
			if ak, err = d.value(depth); err != nil {
				return nil, at(err, "[key "+strconv.Itoa(i)+"]")
			}
			switch k := ak.(type) {
			case []any, map[string]any, map[any]any, time.Time:
				return nil, at(malformed("unhashable map key"), "[key "+strconv.Itoa(i)+"]")
			case float64:
				if math.IsNaN(k) {
					return nil, at(malformed("NaN map key"), "[key "+strconv.Itoa(i)+"]")
				}
			}
			if am == nil {
				am = make(map[any]any, n)
				for k, v := range sm {
					am[k] = v
				}
			}
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, at(err, "["+keyString(ak)+"]")
		}
		if am != nil {
			am[ak] = v
		} else {
			sm[sk] = v
		}
	}
	if am != nil {
		return am, nil
	}
	if t, ok := asDateTime(sm); ok {
		return t, nil
	}
	return sm, nil
}

func (d *refDecoder) connCounters() (*ConnCounters, error) {
	c := &ConnCounters{}
	err := d.fields(func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "open":
			c.Open, err = d.int64()
		case "established":
			c.Established, err = d.int64()
		case "connects":
			c.Connects, err = d.int64()
		case "reconnects":
			c.Reconnects, err = d.int64()
		case "closes":
			c.Closes, err = d.strIntMap()
		case "connect_errors":
			c.ConnectErrors, err = d.strIntMap()
		case "errors":
			c.Errors, err = d.strIntMap()
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
