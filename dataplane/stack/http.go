package stack

import (
	"errors"
	"strconv"
)

// Sentinels of the HTTP parser; pre-allocated, returned unwrapped on the hot
// path and counted, never logged.
var (
	// errHTTP marks a response the client cannot parse.
	errHTTP = errors.New("stack: malformed HTTP response")
	// errHTTPUnsupported marks a response without Content-Length or
	// chunked encoding (read-to-close bodies are not supported), 101
	// Switching Protocols, more than maxInterim interim 1xx responses
	// before the final one, another transfer coding, or a body of 2 GiB or
	// more (Content-Length or chunk sizes in all).
	errHTTPUnsupported = errors.New("stack: unsupported HTTP response framing")
)

// BuildRequest returns the raw bytes of an HTTP/1.1 request, built once per
// task: request line, Host, the headers in order (name, value pairs) and the
// blank line. It does not validate the strings.
func BuildRequest(method, path, host string, headers [][2]string) []byte {
	b := make([]byte, 0, 64)
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	for _, h := range headers {
		b = append(b, h[0]...)
		b = append(b, ": "...)
		b = append(b, h[1]...)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// Parser states.
const (
	psStatus uint8 = iota
	psLine         // skip to the end of the line
	psHdrStart
	psName
	psCL
	psTE
	psConn
	psHdrLF
	psBody
	psChunkSize
	psChunkExt
	psChunkData
	psChunkCR
	psChunkLF
	psTrailer
	psDone
)

// Parser flags.
const (
	pfCandCL = 1 << iota
	pfCandTE
	pfHasCL
	pfChunked
	pfDigit
	pfCandConn
	pfClose  // Connection: close
	pfCLSeen // a complete Content-Length line was read (its value in body)
)

const (
	nameCL    = "content-length"
	nameTE    = "transfer-encoding"
	nameConn  = "connection"
	statusPfx = "HTTP/1."
	maxLength = 1 << 31
	// maxInterim bounds the interim (1xx) responses skipped before a
	// final one, so a server cannot hold a request with them forever.
	maxInterim = 8
)

// respParser finds the end of an HTTP/1.1 response fed in pieces, byte by
// byte, with 16 bytes of state and no buffer: the status code, then
// Content-Length or Transfer-Encoding: chunked and Connection: close among
// the headers, then the body. It lives inside the connection record.
type respParser struct {
	state, pos, flags uint8
	head              bool  // the request was HEAD: no body (RFC 9110 9.3.2)
	interim           uint8 // interim 1xx responses skipped so far
	status            uint16
	remaining         uint32
	body              uint32 // body bytes announced so far (Content-Length, chunk sizes)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// feed consumes b and returns how many bytes belong to the response, whether
// the response is complete, and errHTTP or errHTTPUnsupported.
func (p *respParser) feed(b []byte) (int, bool, error) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch p.state {
		case psStatus:
			switch {
			case p.pos < 7:
				if c != statusPfx[p.pos] {
					return i, false, errHTTP
				}
			case p.pos == 7:
				if c < '0' || c > '9' {
					return i, false, errHTTP
				}
			case p.pos == 8:
				if c != ' ' {
					return i, false, errHTTP
				}
			default:
				if c < '0' || c > '9' {
					return i, false, errHTTP
				}
				p.status = p.status*10 + uint16(c-'0')
				if p.pos == 11 {
					p.state = psLine
				}
			}
			p.pos++
		case psLine:
			if c == '\n' {
				p.state = psHdrStart
			}
		case psHdrStart:
			switch c {
			case '\r':
				p.state = psHdrLF
			case '\n':
				return p.endHeaders(b, i)
			default:
				p.state, p.pos, p.flags = psName, 0, p.flags|pfCandCL|pfCandTE|pfCandConn
				i--
			}
		case psName:
			if c == ':' {
				switch {
				case p.flags&pfCandCL != 0 && p.pos == uint8(len(nameCL)):
					p.state, p.remaining, p.pos, p.flags = psCL, 0, 0, (p.flags|pfHasCL)&^pfDigit
				case p.flags&pfCandTE != 0 && p.pos == uint8(len(nameTE)):
					p.state, p.pos = psTE, 0
				case p.flags&pfCandConn != 0 && p.pos == uint8(len(nameConn)):
					p.state, p.pos = psConn, 0
				default:
					p.state = psLine
				}
				continue
			}
			if c == '\n' {
				return i, false, errHTTP
			}
			lc := lower(c)
			if int(p.pos) >= len(nameCL) || nameCL[p.pos] != lc {
				p.flags &^= pfCandCL
			}
			if int(p.pos) >= len(nameTE) || nameTE[p.pos] != lc {
				p.flags &^= pfCandTE
			}
			if int(p.pos) >= len(nameConn) || nameConn[p.pos] != lc {
				p.flags &^= pfCandConn
			}
			if p.flags&(pfCandCL|pfCandTE|pfCandConn) == 0 {
				p.state = psLine
			}
			p.pos++
		case psCL:
			// pos is 1 once whitespace follows the digits: a digit after
			// it ("1 2") is refused, not read as 12.
			switch {
			case c >= '0' && c <= '9':
				if p.pos != 0 {
					return i, false, errHTTP
				}
				v := uint64(p.remaining)*10 + uint64(c-'0')
				if v >= maxLength {
					return i, false, errHTTPUnsupported
				}
				p.remaining, p.flags = uint32(v), p.flags|pfDigit
			case c == ' ' || c == '\t' || c == '\r':
				if p.flags&pfDigit != 0 {
					p.pos = 1
				}
			case c == '\n':
				// Several Content-Length lines must agree (RFC 9112
				// 6.3); the one read before is in body until the
				// headers end.
				if p.flags&pfDigit == 0 || (p.flags&pfCLSeen != 0 && p.remaining != p.body) {
					return i, false, errHTTP
				}
				p.body, p.flags = p.remaining, p.flags|pfCLSeen
				p.state = psHdrStart
			default:
				return i, false, errHTTP
			}
		case psTE:
			switch {
			case c == '\n':
				if p.pos != 7 {
					return i, false, errHTTPUnsupported
				}
				p.flags |= pfChunked
				p.state = psHdrStart
			case c == ' ' || c == '\t' || c == '\r':
				if p.pos != 0 && p.pos != 7 {
					p.pos = 100
				}
			case p.pos < 7 && lower(c) == "chunked"[p.pos]:
				p.pos++
			default:
				p.pos = 100
			}
		case psConn:
			// Only the exact token "close" counts (no lists).
			switch {
			case c == '\n':
				if p.pos == 5 {
					p.flags |= pfClose
				}
				p.state = psHdrStart
			case c == ' ' || c == '\t' || c == '\r':
				if p.pos != 0 && p.pos != 5 {
					p.pos = 100
				}
			case p.pos < 5 && lower(c) == "close"[p.pos]:
				p.pos++
			default:
				p.pos = 100
			}
		case psHdrLF:
			if c != '\n' {
				return i, false, errHTTP
			}
			return p.endHeaders(b, i)
		case psBody, psChunkData:
			k := uint32(min(len(b)-i, int(p.remaining)))
			p.remaining -= k
			i += int(k) - 1
			if p.remaining == 0 {
				if p.state == psBody {
					p.state = psDone
					return i + 1, true, nil
				}
				p.state = psChunkCR
			}
		case psChunkSize:
			d, ok := hexDigit(c)
			switch {
			case ok:
				if p.remaining > 0x0fffffff {
					return i, false, errHTTPUnsupported
				}
				p.remaining, p.flags = p.remaining<<4|uint32(d), p.flags|pfDigit
			case c == ';' || c == ' ' || c == '\t':
				p.state = psChunkExt
			case c == '\r':
			case c == '\n':
				if done, err := p.chunkLine(); err != nil || done {
					return i + 1, done, err
				}
			default:
				return i, false, errHTTP
			}
		case psChunkExt:
			if c == '\n' {
				if done, err := p.chunkLine(); err != nil || done {
					return i + 1, done, err
				}
			}
		case psChunkCR:
			switch c {
			case '\r':
				p.state = psChunkLF
			case '\n':
				p.state, p.remaining, p.flags = psChunkSize, 0, p.flags&^pfDigit
			default:
				return i, false, errHTTP
			}
		case psChunkLF:
			if c != '\n' {
				return i, false, errHTTP
			}
			p.state, p.remaining, p.flags = psChunkSize, 0, p.flags&^pfDigit
		case psTrailer:
			switch {
			case c == '\n' && p.pos != 1:
				p.state = psDone
				return i + 1, true, nil
			case c == '\n':
				p.pos = 0
			case c == '\r' && p.pos == 0:
				p.pos = 2
			default:
				p.pos = 1
			}
		default:
			return i, false, errHTTP
		}
	}
	return len(b), false, nil
}

// chunkLine ends a chunk-size line.
func (p *respParser) chunkLine() (bool, error) {
	if p.flags&pfDigit == 0 {
		return false, errHTTP
	}
	if p.remaining == 0 {
		p.state, p.pos = psTrailer, 0
		return false, nil
	}
	if uint64(p.body)+uint64(p.remaining) >= maxLength {
		// The same bound as Content-Length's: body counts never wrap.
		return false, errHTTPUnsupported
	}
	p.body += p.remaining
	p.state = psChunkData
	return false, nil
}

// endHeaders decides the body framing at the blank line ending the headers
// (b[i] is its LF).
func (p *respParser) endHeaders(b []byte, i int) (int, bool, error) {
	switch {
	case p.status < 200 && (p.status == 101 || p.interim >= maxInterim):
		return i, false, errHTTPUnsupported
	case p.status < 200:
		// An interim response (100 Continue, 103 Early Hints) has no
		// body; the final response follows (RFC 9110 15.2), as Python's
		// http.client, and so Locust, skip it.
		*p = respParser{head: p.head, interim: p.interim + 1}
		n, done, err := p.feed(b[i+1:])
		return i + 1 + n, done, err
	case p.status == 204 || p.status == 304 || p.head:
		// No body, whatever a Content-Length says.
		p.state, p.body = psDone, 0
		return i + 1, true, nil
	case p.flags&pfChunked != 0:
		// body counts the chunk sizes, not a Content-Length also sent.
		p.state, p.remaining, p.body, p.flags = psChunkSize, 0, 0, p.flags&^pfDigit
	case p.flags&pfHasCL != 0:
		p.body = p.remaining
		if p.remaining == 0 {
			p.state = psDone
			return i + 1, true, nil
		}
		p.state = psBody
	default:
		return i, false, errHTTPUnsupported
	}
	n, done, err := p.feed(b[i+1:])
	return i + 1 + n, done, err
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// serverResponse returns the server's page: a 200 with a body of size bytes
// and Content-Length, kept alive.
func serverResponse(size int) []byte {
	b := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ")
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, "\r\nConnection: keep-alive\r\n\r\n"...)
	for i := range size {
		b = append(b, 'a'+byte(i%26))
	}
	return b
}

// chunkedResponse returns the server's page of size body bytes sent as
// chunks of ChunkSize bytes and the last, empty chunk.
func chunkedResponse(size int) []byte {
	b := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
	for done := 0; done < size; {
		n := min(ChunkSize, size-done)
		b = strconv.AppendInt(b, int64(n), 16)
		b = append(b, "\r\n"...)
		for i := range n {
			b = append(b, 'a'+byte((done+i)%26))
		}
		b = append(b, "\r\n"...)
		done += n
	}
	return append(b, "0\r\n\r\n"...)
}

// badMethodResponse is the server's answer to anything but GET.
var badMethodResponse = []byte("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nAllow: GET\r\n\r\n")
