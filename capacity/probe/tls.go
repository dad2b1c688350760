package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/cicada-load/cicada/capacity"
)

// HTTPS (Options.TLS): every connection the trials open makes a TLS
// handshake after its TCP connect, bounded by ConnectTimeout, and speaks
// HTTP/1.1 inside it (RFC 9411's HTTPS tests: sections 7.6 to 7.9 as
// cps, throughput, latency and concurrent, and tps as RFC 3511 5.7 over
// TLS). A handshake is full unless the configuration holds a
// ClientSessionCache, which crypto/tls then uses to resume sessions the
// target ticketed: the caller chooses, and the trial reports what
// happened (capacity.Trial.TLS: full and resumed handshakes, the
// negotiated version, cipher suite and key exchange group).
//
// Teardown is not run over TLS: its FIN-then-wait close is a TCP
// measurement, and a TLS close_notify would add a round of its own.

// errTLS is wrapped by failed handshakes.
var errTLS = errors.New("probe: TLS handshake")

// tlsTally collects a trial's handshakes.
type tlsTally struct {
	mu   sync.Mutex
	info capacity.TLSInfo
	set  bool
}

func (t *tlsTally) add(st tls.ConnectionState) {
	version := tls.VersionName(st.Version)
	if len(version) > 4 && version[:4] == "TLS " {
		version = version[4:]
	}
	cipher, group := tls.CipherSuiteName(st.CipherSuite), groupName(st.CurveID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if st.DidResume {
		t.info.Resumed++
	} else {
		t.info.Full++
	}
	if !t.set {
		t.set = true
		t.info.Version, t.info.Cipher, t.info.Group = version, cipher, group
	} else if t.info.Version != version || t.info.Cipher != cipher || (t.info.Group != group && !st.DidResume) {
		// A resumed TLS 1.2 session negotiates no group: not a change.
		t.info.Mixed = true
	}
}

// groupName names a key exchange group as the --tls-curves option does
// ("P-256", "X25519", "X25519MLKEM768"); "" for none (a resumed TLS 1.2
// session).
func groupName(id tls.CurveID) string {
	if id == 0 {
		return ""
	}
	n := strings.TrimPrefix(id.String(), "Curve")
	if len(n) == 4 && n[0] == 'P' {
		n = "P-" + n[1:]
	}
	return n
}

func (t *tlsTally) result() *capacity.TLSInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	info := t.info
	return &info
}

// connect opens one connection for HTTP: a TCP connect, and with
// Options.TLS a handshake (counted in rec).
func (p *Prober) connect(ctx context.Context, rec *recorder) (*httpConn, error) {
	c, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	if p.o.TLS == nil {
		return newHTTPConn(c, c), nil
	}
	hctx, cancel := context.WithTimeout(ctx, p.o.ConnectTimeout)
	defer cancel()
	tc := tls.Client(c, p.o.TLS)
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = c.SetLinger(0)
		_ = c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("probe: TLS handshake: %w", err)
		}
		return nil, fmt.Errorf("%w: %w", errTLS, err)
	}
	rec.tls.add(tc.ConnectionState())
	return newHTTPConn(c, tc), nil
}
