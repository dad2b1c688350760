package master

import (
	"strconv"
	"strings"

	"github.com/cicada-load/cicada/protocol"
)

// The TLS columns of PREFIX_connections.csv (issue 16's counters,
// protocol.ConnCounters): appended after the connection columns, so a
// reader that finds its columns by name (testpeer.CSVRow) or by position
// among the first thirteen is unaffected. Every row has them; a worker
// that reports no TLS counters (plain http://, Python workers never
// report connections) has zeros and an empty mean.
//
//	TLS handshakes        full handshakes completed
//	TLS resumed           resumed handshakes completed
//	TLS handshake failures connect errors of the TLS kinds (certificate,
//	                      version, alert, handshake timeout, other TLS);
//	                      a reset or a timeout of the TCP connection during
//	                      the handshake counts under its own kind, as in
//	                      the "Connect errors" column
//	TLS handshakes/s      full and resumed, between the worker's last two
//	                      heartbeats (the total: the sum)
//	Mean TLS handshake (ms) the handshakes' summed time over their count
//	                      (full and resumed together), 3 decimals; empty
//	                      without a handshake
//	HTTP/2 GOAWAY, HTTP/2 RST_STREAM  frames received
const connCSVTLSHeader = ",TLS handshakes,TLS resumed,TLS handshake failures,TLS handshakes/s,Mean TLS handshake (ms),HTTP/2 GOAWAY,HTTP/2 RST_STREAM"

// tlsFailureKinds are the ConnectErrors kinds of a failed TLS handshake.
var tlsFailureKinds = [...]string{
	protocol.FailureTLS, protocol.FailureTLSCertificate, protocol.FailureTLSVersion,
	protocol.FailureTLSAlert, protocol.FailureTLSTimeout,
}

// tlsFailures counts r's failed TLS handshakes.
func (r *connRow) tlsFailures() int64 {
	var n int64
	for _, k := range tlsFailureKinds {
		n += r.c.ConnectErrors[k]
	}
	return n
}

// appendTLSCSV appends r's TLS cells (with their leading commas) to b.
func appendTLSCSV(b *strings.Builder, r connRow) {
	c := &r.c
	var buf [32]byte
	for _, n := range [...]int64{c.TLSHandshakes, c.TLSResumed, r.tlsFailures()} {
		b.WriteByte(',')
		b.Write(strconv.AppendInt(buf[:0], n, 10))
	}
	b.WriteByte(',')
	b.Write(strconv.AppendFloat(buf[:0], r.tlsRate, 'f', 1, 64))
	b.WriteByte(',')
	if hs := c.TLSHandshakes + c.TLSResumed; hs > 0 {
		b.Write(strconv.AppendFloat(buf[:0], float64(c.TLSHandshakeMicros)/float64(hs)/1000, 'f', 3, 64))
	}
	for _, n := range [...]int64{c.H2GoAways, c.H2ResetStreams} {
		b.WriteByte(',')
		b.Write(strconv.AppendInt(buf[:0], n, 10))
	}
}
