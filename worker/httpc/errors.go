package httpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/protocol"
)

// Sentinel errors. Every error Do returns is an *Error; these are wrapped
// inside it (test with errors.Is) where they apply.
var (
	// ErrInvalidURL is wrapped by New and Do when a base URL or a request
	// URL cannot be used (no http/https scheme, no host, bad port, ...).
	ErrInvalidURL = errors.New("httpc: invalid URL")
	// ErrInvalidRequest is wrapped when a Request cannot be put on the wire
	// (a header name or value with CR, LF or NUL, an empty header name, a
	// method with spaces, ...).
	ErrInvalidRequest = errors.New("httpc: invalid request")
	// ErrClosed is wrapped by Do after Close.
	ErrClosed = errors.New("httpc: client closed")
	// ErrConcurrentUse is wrapped by Do when it is called while another Do
	// on the same Client is still running. A Client is one user's session
	// and serves one request at a time.
	ErrConcurrentUse = errors.New("httpc: concurrent Do on one Client")
	// ErrBodyTooLarge is wrapped when a response body (after decoding)
	// exceeds Options.MaxResponseBodySize.
	ErrBodyTooLarge = errors.New("httpc: response body too large")
	// ErrTooManyRedirects is wrapped when more than Options.MaxRedirects
	// redirects were followed.
	ErrTooManyRedirects = errors.New("httpc: too many redirects")
	// ErrEOFBeforeResponse is wrapped when the server closed the connection
	// after the request was sent and before the first response byte.
	ErrEOFBeforeResponse = errors.New("httpc: server closed the connection before responding")
	// ErrIncompleteResponse is wrapped when the server closed the
	// connection in the middle of a response.
	ErrIncompleteResponse = errors.New("httpc: server closed the connection mid-response")
	// ErrUnexpectedData is the close reason when a server sent bytes on an
	// idle connection or after a complete response.
	ErrUnexpectedData = errors.New("httpc: unexpected data from server")
	// ErrHTTPStatus is wrapped by Response.StatusError for 4xx and 5xx codes.
	ErrHTTPStatus = errors.New("httpc: HTTP error status")
)

// Kind classifies a request failure. Kinds say who is at fault
// (GeneratorSide) so reports can tell a saturated load generator from a
// failing server. The zero Kind is Other.
type Kind uint8

// The failure kinds. Classify maps any error onto one of them.
const (
	Other             Kind = iota // not classified
	Refused                       // ECONNREFUSED: nothing listens on the port
	Reset                         // ECONNRESET, EPIPE: the server reset the connection
	EOFBeforeResponse             // the server closed the connection before the first response byte
	Incomplete                    // the server closed the connection mid-response
	ConnectTimeout                // connecting (TCP + TLS handshake) took longer than ConnectTimeout
	ReadTimeout                   // the exchange took longer than Timeout (or the context deadline)
	DNS                           // the host name could not be resolved
	TLS                           // the TLS handshake or a TLS record failed
	HTTPStatus                    // the server answered 4xx or 5xx (classified by the caller, see Response.StatusError)
	Protocol                      // the server's response is not valid HTTP/1.x
	Unreachable                   // ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN
	PortsExhausted                // EADDRNOTAVAIL, EADDRINUSE: the generator ran out of local ports (or a bad LocalAddr)
	FileLimit                     // EMFILE, ENFILE: the generator hit its open-file limit
	NoBuffers                     // ENOBUFS, ENOMEM: the generator's kernel ran out of socket memory
	BodyTooLarge                  // the response exceeded Options.MaxResponseBodySize
	Canceled                      // the context was canceled (the user is stopping)
	InvalidRequest                // the request or URL cannot be sent (a scenario bug)
	ClientClosed                  // Do after Close, or concurrent Do
	TLSCertificate                // the server's certificate did not verify (expired, unknown authority, wrong name)
	TLSVersion                    // client and server share no TLS version
	TLSAlert                      // the server ended the handshake with a TLS alert
	TLSTimeout                    // the TLS handshake took longer than ConnectTimeout
	numKinds
)

// NumKinds is the number of Kinds, for arrays indexed by Kind.
const NumKinds = int(numKinds)

// kindNames are the wire labels of the kinds (protocol's Failure* table).
var kindNames = [numKinds]string{
	Other:             protocol.FailureOther,
	Refused:           protocol.FailureRefused,
	Reset:             protocol.FailureReset,
	EOFBeforeResponse: protocol.FailureEOFBeforeResponse,
	Incomplete:        protocol.FailureIncomplete,
	ConnectTimeout:    protocol.FailureConnectTimeout,
	ReadTimeout:       protocol.FailureReadTimeout,
	DNS:               protocol.FailureDNS,
	TLS:               protocol.FailureTLS,
	HTTPStatus:        protocol.FailureHTTPStatus,
	Protocol:          protocol.FailureProtocol,
	Unreachable:       protocol.FailureUnreachable,
	PortsExhausted:    protocol.FailurePortsExhausted,
	FileLimit:         protocol.FailureFileLimit,
	NoBuffers:         protocol.FailureNoBuffers,
	BodyTooLarge:      protocol.FailureBodyTooLarge,
	Canceled:          protocol.FailureCanceled,
	InvalidRequest:    protocol.FailureInvalidRequest,
	ClientClosed:      protocol.FailureClientClosed,
	TLSCertificate:    protocol.FailureTLSCertificate,
	TLSVersion:        protocol.FailureTLSVersion,
	TLSAlert:          protocol.FailureTLSAlert,
	TLSTimeout:        protocol.FailureTLSTimeout,
}

// generatorSide is derived from protocol's table of failure kinds, the one
// home of which kinds are the generator's fault.
var generatorSide = func() (g [numKinds]bool) {
	for k, label := range kindNames {
		g[k] = protocol.GeneratorSideKind(label)
	}
	return g
}()

// String returns a short lower-case label ("connection refused", "read
// timeout", "local ports exhausted", ...).
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// GeneratorSide reports whether a failure of this kind is the load
// generator's own fault (a local resource limit, a stopping user, a broken
// scenario) rather than the server's or the network's. Figures from a run
// with generator-side failures measure the generator, not the target.
func (k Kind) GeneratorSide() bool { return k < numKinds && generatorSide[k] }

// IsTimeout reports whether k is ConnectTimeout or ReadTimeout.
func (k Kind) IsTimeout() bool { return k == ConnectTimeout || k == ReadTimeout }

// Error is the error type of every failed Do and of Response.StatusError.
// Its Error method returns the failure string Locust would record for the
// same failure, so it can be used as the stats error key directly:
//
//	ConnectionRefusedError(111, 'Connection refused')
//	HTTPError('404 Client Error: Not Found for url: http://127.0.0.1:8080/missing')
//	RemoteDisconnected('Remote end closed connection without response')
//	cicada: local ports exhausted (EADDRNOTAVAIL): OSError(99, 'Cannot assign requested address') ...
//
// Python reprs are used where Locust has an obvious analogue (the errno
// exceptions of FastHttpUser and HttpUser, requests' HTTPError, http.client's
// RemoteDisconnected and IncompleteRead); generator-side failures get a
// message that names the exhausted limit instead. Unwrap gives the
// underlying error, so errors.Is(err, syscall.ECONNREFUSED) works.
type Error struct {
	Kind Kind   // the classification
	Op   string // "dial", "tls", "write", "read", "status", "request"
	URL  string // the request URL, where known
	Err  error  // the underlying error; nil for HTTPStatus

	// Status and Reason are set for HTTPStatus errors.
	Status int
	Reason string
}

// Error returns the Locust-style failure message.
func (e *Error) Error() string { return message(e) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error {
	if e.Kind == HTTPStatus && e.Err == nil {
		return ErrHTTPStatus
	}
	return e.Err
}

// Classify maps err onto a Kind. It understands *Error (returning its
// Kind), syscall errnos wherever they are wrapped (*net.OpError,
// *os.SyscallError), *net.DNSError, TLS and certificate errors, timeouts,
// context errors and this package's sentinels. Classify(nil) is Other.
func Classify(err error) Kind {
	if err == nil {
		return Other
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return classify(err, "")
}

// classify classifies a raw error that happened during op ("dial", "tls",
// "write", "read"; "" if unknown).
func classify(err error, op string) Kind {
	var opErr *net.OpError
	if op == "" && errors.As(err, &opErr) {
		op = opErr.Op
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, ErrClosed), errors.Is(err, ErrConcurrentUse):
		return ClientClosed
	case errors.Is(err, ErrInvalidURL), errors.Is(err, ErrInvalidRequest), errors.Is(err, ErrTooManyRedirects):
		return InvalidRequest
	case errors.Is(err, ErrBodyTooLarge), errors.Is(err, fasthttp.ErrBodyTooLarge):
		return BodyTooLarge
	case errors.Is(err, ErrHTTPStatus):
		return HTTPStatus
	case errors.Is(err, ErrEOFBeforeResponse), errors.Is(err, fasthttp.ErrConnectionClosed):
		return EOFBeforeResponse
	case errors.Is(err, ErrIncompleteResponse):
		return Incomplete
	}
	if k, ok := classifyTLS(err, op); ok {
		return k
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if k, ok := errnoKind(errno); ok {
			if k == ConnectTimeout && op != "dial" && op != "tls" {
				return ReadTimeout // ETIMEDOUT on an established connection
			}
			return k
		}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return DNS
	}
	if isTLSError(err) {
		return TLS
	}
	if isTimeout(err) {
		if op == "dial" || op == "tls" {
			return ConnectTimeout
		}
		return ReadTimeout
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if op == "read" {
			return Incomplete
		}
		return EOFBeforeResponse
	}
	if op == "tls" {
		return TLS
	}
	if op == "read" {
		return Protocol
	}
	var addrErr *net.AddrError
	if errors.As(err, &addrErr) {
		return InvalidRequest
	}
	return Other
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, fasthttp.ErrTimeout) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTLSError(err error) bool {
	var (
		rh    tls.RecordHeaderError
		alert tls.AlertError
		cv    *tls.CertificateVerificationError
		ua    x509.UnknownAuthorityError
		hn    x509.HostnameError
		ci    x509.CertificateInvalidError
		ech   *tls.ECHRejectionError
	)
	return errors.As(err, &rh) || errors.As(err, &alert) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &ech)
}

// errnoInfo describes the errnos this package names. pyClass and text are
// what CPython on Linux prints for the same OSError (class name and glibc
// strerror), so failure strings match Locust's.
type errnoInfo struct {
	kind    Kind
	pyClass string
	text    string
	name    string // the C constant, for generator-side messages
}

var errnos = map[syscall.Errno]errnoInfo{
	syscall.ECONNREFUSED:  {Refused, "ConnectionRefusedError", "Connection refused", "ECONNREFUSED"},
	syscall.ECONNRESET:    {Reset, "ConnectionResetError", "Connection reset by peer", "ECONNRESET"},
	syscall.ECONNABORTED:  {Reset, "ConnectionAbortedError", "Software caused connection abort", "ECONNABORTED"},
	syscall.EPIPE:         {Reset, "BrokenPipeError", "Broken pipe", "EPIPE"},
	syscall.ETIMEDOUT:     {ConnectTimeout, "TimeoutError", "Connection timed out", "ETIMEDOUT"},
	syscall.ENETUNREACH:   {Unreachable, "OSError", "Network is unreachable", "ENETUNREACH"},
	syscall.EHOSTUNREACH:  {Unreachable, "OSError", "No route to host", "EHOSTUNREACH"},
	syscall.ENETDOWN:      {Unreachable, "OSError", "Network is down", "ENETDOWN"},
	syscall.EHOSTDOWN:     {Unreachable, "OSError", "Host is down", "EHOSTDOWN"},
	syscall.EADDRNOTAVAIL: {PortsExhausted, "OSError", "Cannot assign requested address", "EADDRNOTAVAIL"},
	syscall.EADDRINUSE:    {PortsExhausted, "OSError", "Address already in use", "EADDRINUSE"},
	syscall.EMFILE:        {FileLimit, "OSError", "Too many open files", "EMFILE"},
	syscall.ENFILE:        {FileLimit, "OSError", "Too many open files in system", "ENFILE"},
	syscall.ENOBUFS:       {NoBuffers, "OSError", "No buffer space available", "ENOBUFS"},
	syscall.ENOMEM:        {NoBuffers, "MemoryError", "Cannot allocate memory", "ENOMEM"},
}

func errnoKind(e syscall.Errno) (Kind, bool) {
	info, ok := errnos[e]
	return info.kind, ok
}

// message renders e the way Locust would record it.
func message(e *Error) string {
	if e.Kind == HTTPStatus {
		return httpErrorRepr(e.Status, e.Reason, e.URL)
	}
	var errno syscall.Errno
	hasErrno := errors.As(e.Err, &errno)
	switch e.Kind {
	case PortsExhausted:
		if e.Op == "dial" && errno == syscall.EADDRNOTAVAIL {
			return "cicada: local ports exhausted (EADDRNOTAVAIL): the load generator ran out of local ports or LocalAddr is not a local address; " +
				"widen net.ipv4.ip_local_port_range or add --source-ips: " + osErrorRepr(errno)
		}
		return "cicada: local address unavailable (" + errnoName(errno) + "); the load generator ran out of local ports: " + osErrorRepr(errno)
	case FileLimit:
		return "cicada: open-file limit reached (" + errnoName(errno) + "): the load generator cannot open more sockets; " +
			"raise ulimit -n (RLIMIT_NOFILE) or fs.file-max: " + osErrorRepr(errno)
	case NoBuffers:
		return "cicada: kernel socket memory exhausted (" + errnoName(errno) + ") on the load generator: " + osErrorRepr(errno)
	case BodyTooLarge:
		var be *bodyTooLargeError
		if errors.As(e.Err, &be) {
			return "cicada: response body larger than MaxResponseBodySize (" + strconv.Itoa(be.limit) + " bytes)"
		}
		return "cicada: response body larger than MaxResponseBodySize"
	case Canceled:
		return "cicada: request canceled (user stopped)"
	case InvalidRequest, ClientClosed:
		return "cicada: " + strings.TrimPrefix(errText(e.Err), "httpc: ")
	case EOFBeforeResponse:
		return "RemoteDisconnected('Remote end closed connection without response')"
	case Incomplete:
		var ie *incompleteError
		if errors.As(e.Err, &ie) {
			return "IncompleteRead(" + strconv.FormatInt(ie.n, 10) + " bytes read)"
		}
		return "IncompleteRead(" + pyrepr.String(errText(e.Err)) + ")"
	case ConnectTimeout:
		if hasErrno {
			return osErrorRepr(errno)
		}
		return "ConnectTimeoutError('connect timed out')"
	case ReadTimeout:
		if hasErrno {
			return osErrorRepr(errno)
		}
		return "TimeoutError('timed out')"
	case DNS:
		var dnsErr *net.DNSError
		if errors.As(e.Err, &dnsErr) && !dnsErr.IsNotFound {
			return "gaierror(-3, 'Temporary failure in name resolution')"
		}
		return "gaierror(-2, 'Name or service not known')"
	case TLS:
		return "SSLError(" + pyrepr.String(errText(e.Err)) + ")"
	case TLSCertificate, TLSVersion, TLSAlert, TLSTimeout:
		return tlsMessage(e.Kind, e.Err)
	case Protocol:
		return "HTTPParseError(" + pyrepr.String(parseErrorText(e.Err)) + ")"
	}
	if hasErrno {
		return osErrorRepr(errno)
	}
	return "OSError(" + pyrepr.String(errText(e.Err)) + ")"
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func errnoName(e syscall.Errno) string {
	if info, ok := errnos[e]; ok {
		return info.name
	}
	return "errno " + strconv.Itoa(int(e))
}

// osErrorRepr renders an errno like CPython's repr of the matching
// OSError subclass: ConnectionRefusedError(111, 'Connection refused').
func osErrorRepr(e syscall.Errno) string {
	class, text := "OSError", ""
	if info, ok := errnos[e]; ok {
		class, text = info.pyClass, info.text
	} else {
		text = e.Error()
		if text != "" {
			text = strings.ToUpper(text[:1]) + text[1:]
		}
	}
	return class + "(" + strconv.Itoa(int(e)) + ", " + pyrepr.String(text) + ")"
}

// httpErrorRepr renders requests' HTTPError for a 4xx/5xx status:
// HTTPError('404 Client Error: Not Found for url: http://host/missing').
func httpErrorRepr(status int, reason, url string) string {
	side := "Client"
	if status >= 500 {
		side = "Server"
	}
	if reason == "" {
		reason = fasthttp.StatusMessage(status)
	}
	return "HTTPError(" + pyrepr.String(strconv.Itoa(status)+" "+side+" Error: "+reason+" for url: "+url) + ")"
}

// parseErrorText is fasthttp's parse error without the quoted response
// bytes it includes, so that one kind of malformed response gives one
// failure entry, not one per distinct response.
func parseErrorText(err error) string {
	s := errText(err)
	s = strings.TrimPrefix(s, "error when reading response headers: ")
	s = strings.TrimPrefix(s, "fasthttp: ")
	if i := strings.IndexAny(s, "\"\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, " :.")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// bodyTooLargeError is a body beyond Options.MaxResponseBodySize.
type bodyTooLargeError struct{ limit int }

func (e *bodyTooLargeError) Error() string {
	return "httpc: response body too large (limit " + strconv.Itoa(e.limit) + " bytes)"
}

func (e *bodyTooLargeError) Is(target error) bool { return target == ErrBodyTooLarge }
