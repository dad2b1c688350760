package web

// appendTLSMetrics adds the TLS handshake and HTTP/2 frame counters of the
// workers (issue 16), only when one of them counted any: a plain HTTP/1.1
// test's metrics do not change.
func appendTLSMetrics(ws []*WorkerInfo, gauge func(name, typ, help string, val func(c *ConnStats) float64)) {
	seen := false
	for _, w := range ws {
		c := w.Conn
		if c.TLSHandshakes != 0 || c.TLSResumed != 0 || c.H2GoAways != 0 || c.H2ResetStreams != 0 {
			seen = true
		}
	}
	if !seen {
		return
	}
	gauge("cicada_worker_tls_handshakes_total", "counter", "Completed full TLS handshakes of each worker.",
		func(c *ConnStats) float64 { return float64(c.TLSHandshakes) })
	gauge("cicada_worker_tls_resumed_total", "counter", "Completed TLS handshakes that resumed a session, per worker.",
		func(c *ConnStats) float64 { return float64(c.TLSResumed) })
	gauge("cicada_worker_tls_handshake_seconds_total", "counter", "Time spent in completed TLS handshakes (full and resumed), per worker.",
		func(c *ConnStats) float64 { return c.TLSHandshakeTime.Seconds() })
	gauge("cicada_worker_tls_handshakes_per_second", "gauge", "TLS handshake rate (full and resumed) of each worker between its last two heartbeats.",
		func(c *ConnStats) float64 { return c.TLSHandshakesPerSec })
	gauge("cicada_worker_http2_goaways_total", "counter", "HTTP/2 GOAWAY frames received by each worker.",
		func(c *ConnStats) float64 { return float64(c.H2GoAways) })
	gauge("cicada_worker_http2_rst_streams_total", "counter", "HTTP/2 RST_STREAM frames received by each worker.",
		func(c *ConnStats) float64 { return float64(c.H2ResetStreams) })
}
