package capacity

import (
	"fmt"
	"strconv"
	"strings"
)

// TLSInfo is what a trial over TLS negotiated (RFC 9411 section 6.3 asks
// for the TLS version, cipher suite and key exchange of the test).
type TLSInfo struct {
	// Full and Resumed count the completed handshakes of each kind.
	Full, Resumed int64
	// Version, Cipher and Group are the first handshake's negotiated
	// parameters ("1.3", "TLS_AES_128_GCM_SHA256", "X25519MLKEM768").
	Version, Cipher, Group string
	// Mixed is set when a later handshake negotiated other parameters.
	Mixed bool
}

// String is "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519: 812 full, 0 resumed
// handshakes".
func (t *TLSInfo) String() string {
	if t == nil {
		return ""
	}
	s := fmt.Sprintf("TLS %s %s %s: %d full, %d resumed handshakes", t.Version, t.Cipher, t.Group, t.Full, t.Resumed)
	if t.Mixed {
		s += " (other parameters negotiated too)"
	}
	return s
}

// MixCount is one object size of a traffic mix in a trial: the
// transactions that fetched it and succeeded, and their body bytes.
type MixCount struct {
	Size          int64
	Count, Failed int64
	Bytes         int64
}

// MixSummary is "1024 B: 512 ok 0 failed 524288 bytes; ..." for a CSV cell.
func MixSummary(m []MixCount) string {
	var b strings.Builder
	for i, c := range m {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strconv.FormatInt(c.Size, 10))
		b.WriteString(" B: ")
		b.WriteString(strconv.FormatInt(c.Count, 10))
		b.WriteString(" ok ")
		b.WriteString(strconv.FormatInt(c.Failed, 10))
		b.WriteString(" failed ")
		b.WriteString(strconv.FormatInt(c.Bytes, 10))
		b.WriteString(" bytes")
	}
	return b.String()
}
