package httpc

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Phases are the parts of one request's time (Response.Phases), measured
// without allocating on a keep-alive connection:
//
//   - DNS: resolving the host name of a new connection (zero, and HasDNS
//     false, for an IP address or a reused connection);
//   - Connect: the TCP handshake of a new connection;
//   - TLS: the TLS handshake of a new https connection;
//   - TTFB: time to first byte, from the start of the request (Do) to the
//     first byte of the final response: it includes DNS, Connect, TLS,
//     sending the request and the server's time, and any redirects before;
//   - Body: from that first byte to the end of the final response.
//
// On a new connection DNS + Connect + TLS ≤ TTFB, and TTFB + Body ≤
// Response.Duration (Locust's response time, which also holds the copy of
// the response and the cookie jar). Connections opened for redirects to
// other origins add their DNS, Connect and TLS times. After an error the
// phases reached so far are set; TTFB and Body are zero if no response
// byte arrived. HTTP/2 requests (Options.HTTP2), which share one
// connection, carry no phases yet.
type Phases struct {
	DNS, Connect, TLS, TTFB, Body time.Duration
	// HasDNS, HasConnect and HasTLS report that the request resolved a
	// name, opened a connection, and made a TLS handshake.
	HasDNS, HasConnect, HasTLS bool
}

// dialTCP connects to addr (host:port), timing DNS and the TCP handshake
// into ph (nil: not timed). A host name is resolved first (c's dialer's resolver) and
// its addresses tried in order; an IP address is dialled directly.
func (c *Client) dialTCP(ctx context.Context, addr string, ph *Phases) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return c.dialTimed(ctx, addr, ph)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return c.dialTimed(ctx, addr, ph)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return c.dialTimed(ctx, addr, ph)
	}
	res := c.cfg.dialer.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	t0 := time.Now()
	ips, err := res.LookupNetIP(ctx, "ip", host)
	if ph != nil {
		ph.DNS += time.Since(t0)
		ph.HasDNS = true
	}
	if err != nil {
		return nil, err // a *net.DNSError: classified as DNS
	}
	var first error
	for _, ip := range ips {
		conn, err := c.dialTimed(ctx, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String(), ph)
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

func (c *Client) dialTimed(ctx context.Context, addr string, ph *Phases) (net.Conn, error) {
	t0 := time.Now()
	conn, err := c.cfg.dialer.DialContext(ctx, "tcp", addr)
	if ph != nil {
		ph.Connect += time.Since(t0)
		ph.HasConnect = true
	}
	return conn, err
}

// finishPhases completes resp.Phases after a request that started at start.
func (c *Client) finishPhases(resp *Response, start time.Time) {
	resp.Phases = c.ph
	if !resp.firstByte.IsZero() {
		resp.Phases.TTFB = resp.firstByte.Sub(start)
		resp.Phases.Body = resp.bodyEnd.Sub(resp.firstByte)
	}
}
