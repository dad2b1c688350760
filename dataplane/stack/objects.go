package stack

import (
	"strconv"
	"unsafe"
)

// The server's responses (issue 17). Every request a server connection
// reads becomes a descriptor of the response it gets, a uint32:
//
//	bits 0-24   the body size of a /bytes/<n> object (0..MaxObjectSize)
//	bits 25-26  the kind: the fixed page, an object, 405, 400
//	bit 27      HEAD: the headers only
//
// A response is never held in a per-connection buffer: the page and the
// error pages are built once per stack, an object's headers are built per
// segment from its size into a per-stack scratch, and its body is a window
// into a constant pattern ('a' + offset mod 26, the kernel target's bytes).
// A connection keeps the descriptors of its pending requests (the first is
// the response in flight), the response's first sequence number (respSeq)
// and how far the peer acknowledged it (sndUna): nothing else.

// MaxObjectSize is the largest /bytes/<n> object, the kernel target's
// (target.MaxObjectSize, 16 MiB).
const MaxObjectSize = 16 << 20

// Response kinds (descriptor bits 25-26).
const (
	kindPage   = 0 << 25
	kindObject = 1 << 25
	kindBadMth = 2 << 25 // 405: a method other than GET or HEAD
	kindBadReq = 3 << 25 // 400: a /bytes/ path whose size is not 0..MaxObjectSize
	kindMask   = 3 << 25
	descHead   = 1 << 27
	sizeMask   = 1<<25 - 1
	// While a size is read, bits 28-31 count its digits; sizeBad there
	// marks one already invalid (more than 9 digits, above MaxObjectSize).
	digitShift = 28
	sizeBad    = 15
)

// BadObjectSizeBody is the 400's body for a /bytes/ size not in
// 0..MaxObjectSize, the kernel target's (target checks they agree).
const BadObjectSizeBody = "size must be 0-16777216 bytes\n"

// badSizeResponse is the server's answer to a /bytes/ path whose size is
// not a decimal 0..MaxObjectSize, as the kernel target's.
var badSizeResponse = []byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
	strconv.Itoa(len(BadObjectSizeBody)) + "\r\nConnection: keep-alive\r\n\r\n" + BadObjectSizeBody)

// objectHead is the start of an object's headers; its Content-Length and
// objectTail follow.
const (
	objectHead = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: "
	objectTail = "\r\nConnection: keep-alive\r\n\r\n"
)

// srvReqs is a server connection's request queue and request scan. It
// lives in the bytes of the record's user, which only a client with a
// Program uses (a server record's user is zero otherwise), and stops short
// of user.uflags, which close reads in both modes.
type srvReqs struct {
	pend [maxPending]uint32 // descriptors; pend[0] is in flight when fResp is set
	scan uint32             // the descriptor of the request being read
}

// srvCC is a server connection's congestion state (congestion.go), in the
// bytes of the record's HTTP response parser, which only a client uses.
type srvCC struct {
	cwnd     uint32 // congestion window, bytes
	ssthresh uint32 // slow start threshold, bytes
	recover  uint32 // the highest byte sent when recovery began (RFC 6582)
	sndMax   uint32 // the highest sequence sent (sndNxt goes back on a timeout)
}

// Both overlays fit where they live (a negative array length does not
// compile).
var (
	_ [unsafe.Offsetof(user{}.uflags) - unsafe.Sizeof(srvReqs{})]struct{}
	_ [unsafe.Sizeof(respParser{}) - unsafe.Sizeof(srvCC{})]struct{}
)

// reqs returns server record c's request queue (see srvReqs).
func (c *conn) reqs() *srvReqs { return (*srvReqs)(unsafe.Pointer(&c.user)) }

// cc returns server record c's congestion state (see srvCC).
func (c *conn) cc() *srvCC { return (*srvCC)(unsafe.Pointer(&c.http)) }

// Request scan states (conn.reqState bits 2-7; bits 0-1 count the matched
// bytes of the blank line "\r\n\r\n").
const (
	rsStart = iota // the first byte of the request
	rsG            // "G" matched
	rsGE           // "GE"
	rsGET          // "GET"
	rsH            // "H"
	rsHE           // "HE"
	rsHEA          // "HEA"
	rsHEAD         // "HEAD"
	rsPath         // after the method's space: rsPath+k matched k bytes of "/bytes/"
	// rsSize: "/bytes/" matched, reading the size.
	rsSize   uint8 = rsPath + uint8(len(objectPrefix))
	rsRest   uint8 = rsSize + 1 // the descriptor is known: on to the blank line
	rsMethod uint8 = rsSize + 2 // another method: on to the blank line (405)
)

const objectPrefix = "/bytes/"

// scanRequests reads p as requests (each ended by a blank line) and queues
// each one's descriptor; false when more than maxPending are pending. It
// matches the method (GET, HEAD; anything else is a 405), and in the
// request target "/bytes/<n>" up to a space, '?' or the line's end, <n>
// being 1-9 decimal digits of 0..MaxObjectSize (else a 400, as the kernel
// target); any other target is the page.
func (s *Stack) scanRequests(c *conn, p []byte) bool {
	const blank = "\r\n\r\n"
	q := c.reqs()
	st, t := c.reqState>>2, c.reqState&3
	for _, b := range p {
		switch {
		case st == rsStart && b == 'G':
			st, q.scan = rsG, 0
		case st == rsStart && b == 'H':
			st, q.scan = rsH, descHead
		case st >= rsG && st < rsGET && b == "GET"[st-rsStart], st >= rsH && st < rsHEAD && b == "HEAD"[st-rsG-2]:
			st++
		case (st == rsGET || st == rsHEAD) && b == ' ':
			st = rsPath
		case st >= rsPath && st < rsSize:
			k := st - rsPath
			if b == objectPrefix[k] {
				st++
			} else {
				st = rsRest // the page (kindPage)
			}
			if st == rsSize {
				q.scan |= kindObject
			}
		case st == rsSize:
			switch {
			case b >= '0' && b <= '9':
				// Leading zeros count as digits, as atoiPath's.
				n, v := digits(q.scan), (q.scan&sizeMask)*10+uint32(b-'0')
				if n >= 9 || v > MaxObjectSize {
					q.scan |= sizeBad << digitShift
				} else {
					q.scan = q.scan&^(sizeMask|sizeBad<<digitShift) | v | (n+1)<<digitShift
				}
			default:
				q.scan = endSize(q.scan, b)
				st = rsRest
			}
		case st < rsPath:
			st = rsMethod
		}
		switch b {
		case blank[t]:
			t++
		case '\r':
			t = 1
		default:
			t = 0
		}
		if t == 4 {
			if c.pending >= maxPending {
				return false
			}
			d := q.scan
			switch {
			case st < rsPath || st == rsMethod:
				d = kindBadMth
			case st == rsSize:
				d = endSize(d, '\n')
			case st < rsSize:
				d &= descHead // the page
			}
			q.pend[c.pending] = d &^ (sizeBad << digitShift)
			c.pending++
			st, t, q.scan = rsStart, 0, 0
		}
	}
	c.reqState = st<<2 | t
	return true
}

// digits returns how many size digits scan holds (sizeBad: invalid).
func digits(scan uint32) uint32 { return scan >> digitShift & sizeBad }

// endSize ends a /bytes/ size at byte b: an object for a space, '?', CR or
// LF after 1-9 digits in range, a 400 otherwise (no digits, too many or too
// large, or any other byte in the path, as "/bytes/12/x" or "/bytes/1a").
func endSize(scan uint32, b byte) uint32 {
	ok := b == ' ' || b == '?' || b == '\r' || b == '\n'
	if n := digits(scan); !ok || n == 0 || n == sizeBad {
		return scan&descHead | kindBadReq
	}
	return scan & (descHead | kindObject | sizeMask)
}

// respLen returns the length of the response of descriptor d.
func (s *Stack) respLen(d uint32) uint32 {
	switch d & kindMask {
	case kindObject:
		h := uint32(len(objectHead)+len(objectTail)) + decimalLen(d&sizeMask)
		if d&descHead != 0 {
			return h
		}
		return h + d&sizeMask
	case kindBadMth:
		return uint32(len(badMethodResponse))
	case kindBadReq:
		if d&descHead != 0 {
			return uint32(len(badSizeResponse) - len(BadObjectSizeBody))
		}
		return uint32(len(badSizeResponse))
	}
	if d&descHead != 0 {
		return s.pageHead
	}
	return uint32(len(s.pages[0]))
}

func decimalLen(n uint32) uint32 {
	l := uint32(1)
	for n >= 10 {
		n /= 10
		l++
	}
	return l
}

// respBytes returns n bytes of descriptor d's response from offset off,
// valid until the next call (a window into a built response, the pattern
// or the stack's scratch).
func (s *Stack) respBytes(d, off, n uint32) []byte {
	switch d & kindMask {
	case kindObject:
	case kindBadMth:
		return badMethodResponse[off : off+n]
	case kindBadReq:
		return badSizeResponse[off : off+n]
	default:
		return s.pages[0][off : off+n]
	}
	size := d & sizeMask
	if s.objHeadFor != size+1 {
		h := append(s.objHead[:0], objectHead...)
		h = strconv.AppendUint(h, uint64(size), 10)
		s.objHead = append(h, objectTail...)
		s.objHeadFor = size + 1
	}
	hl := uint32(len(s.objHead))
	if off >= hl {
		k := (off - hl) % 26
		return s.pattern[k : k+n]
	}
	b := append(s.scratch[:0], s.objHead[off:min(hl, off+n)]...)
	if rest := off + n - min(hl, off+n); rest > 0 {
		b = append(b, s.pattern[:rest]...)
	}
	s.scratch = b
	return b
}

// initObjects builds a server stack's pattern and scratch (no allocation
// per segment after this).
func (s *Stack) initObjects() {
	mss := int(s.cfg.MSS)
	s.pattern = make([]byte, 26+mss)
	for i := range s.pattern {
		s.pattern[i] = 'a' + byte(i%26)
	}
	s.scratch = make([]byte, 0, mss)
	s.objHead = make([]byte, 0, len(objectHead)+len(objectTail)+10)
	if i := indexBlank(s.pages[0]); i >= 0 {
		s.pageHead = uint32(i + 4)
	} else {
		s.pageHead = uint32(len(s.pages[0]))
	}
}

func indexBlank(b []byte) int {
	for i := 0; i+4 <= len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' && b[i+2] == '\r' && b[i+3] == '\n' {
			return i
		}
	}
	return -1
}
