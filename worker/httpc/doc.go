// Package httpc is the per-user HTTP client of the cicada worker: the
// equivalent of one Locust HttpUser/FastHttpUser session.
//
// A Client is one user. It keeps one keep-alive HTTP/1.1 connection to the
// origin of its base URL, opened on the first request and reopened
// transparently when the server has closed it (counted in Counters), and
// a cookie jar. Requests to other origins (absolute URLs, redirects) use a
// one-request connection each.
//
// # TLS and HTTP/2
//
// Options.TLS sets the TLS options as data (TLSOptions: CA bundle, client
// certificate, server name, versions, cipher suites, session resumption,
// ALPN); NewConfig reads the files and refuses what crypto/tls cannot do
// (TLS 1.3 cipher suites, h2 in ALPN without HTTP2). Session resumption is
// off by default, as in Python's ssl module between connections: every new
// connection makes a full handshake. Counters count full and resumed
// handshakes and their time; handshake failures have kinds of their own
// (TLSCertificate, TLSVersion, TLSAlert, TLSTimeout) with the texts
// Python's ssl module raises, without its "(_ssl.c:NNN)" suffix.
//
// Options.HTTP2 speaks h2 (ALPN) or h2c with prior knowledge over one
// connection per Client, with golang.org/x/net/http2's framing; Do is then
// safe for concurrent use, one stream per call, at most HTTP2Streams at
// once. Redirects and absolute URLs stay on the base origin in this mode
// (another origin fails with InvalidRequest): a deliberate limit.
//
// # Ownership
//
// Responses own their bytes. Do returns a new *Response; DoInto fills a
// caller-owned one, reusing its buffers. Neither keeps a reference to
// pooled memory after it returns, so fasthttp's buffer-reuse rules never
// reach the caller: the only way a Response changes is being passed to
// DoInto again. Requests are only read.
//
// # Memory
//
// The client is built for tens of thousands of mostly idle users per
// process. An idle Client holds its net.Conn and a few hundred bytes: no
// goroutine, no bufio buffers, no response. The read and write buffers and
// the fasthttp.Response used to parse a response are taken from a
// sync.Pool for the duration of one exchange. Before an idle connection
// is reused, one non-blocking MSG_PEEK (Linux) checks that the server has
// not closed it; a request that still meets a closed connection is
// retried once on a new one when that is safe. Users of one base URL
// should share a Config (NewConfig, Config.NewClient): an idle Client then
// costs about 700 bytes of Go heap besides its socket.
//
// The I/O runs on the caller's goroutine. A request grows that goroutine's
// stack to 4 KiB (a connect to 8 KiB, halved by the next GC), and Go does
// not shrink a parked goroutine's stack below 4 KiB again, so count 4 KiB
// of stack per user goroutine that has made a request.
//
// # Failures
//
// Every error Do returns is an *Error. Its Kind (see Classify) says what
// failed and whether the load generator itself is at fault
// (Kind.GeneratorSide: ports or file descriptors exhausted, a stopping
// user, a broken scenario). Its message is the string Locust would record
// for the same failure (a Python repr such as
// ConnectionRefusedError(111, 'Connection refused')), so it can be the
// stats error key as is. HTTP status checks are the caller's:
// Response.StatusError gives requests' HTTPError for 4xx and 5xx.
//
// # Locking
//
// Client.mu guards the connection fields that Close (any goroutine) and
// the context-cancellation callback share with Do. Everything else of a
// Client is touched only by the goroutine running Do, which Client.busy
// (an atomic flag) makes exclusive. No lock is held during I/O.
package httpc
