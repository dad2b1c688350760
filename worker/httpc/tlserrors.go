package httpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"syscall"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// classifyTLS classifies the TLS handshake failures: a certificate that
// did not verify, no common version, an alert from the server, a
// handshake that timed out. It returns false for everything else (TCP
// errors during the handshake keep their errno kind).
func classifyTLS(err error, op string) (Kind, bool) {
	var (
		cv *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		hn x509.HostnameError
		ci x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &cv), errors.As(err, &ua), errors.As(err, &hn), errors.As(err, &ci):
		return TLSCertificate, true
	}
	if isVersionError(err) {
		return TLSVersion, true
	}
	if _, ok := remoteAlert(err); ok {
		return TLSAlert, true
	}
	if op == "tls" && isTimeout(err) {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			return TLSTimeout, true
		}
	}
	return Other, false
}

// isVersionError reports a handshake that failed for want of a common
// protocol version: the server's protocol_version alert, or the client
// refusing the version the server chose (crypto/tls reports that with a
// plain error, so its text is matched).
func isVersionError(err error) bool {
	if code, ok := remoteAlert(err); ok {
		return code == 70 // protocol_version
	}
	s := errText(err)
	return strings.Contains(s, "unsupported protocol version") ||
		strings.Contains(s, "offered only unsupported versions") ||
		strings.Contains(s, "no supported versions")
}

// remoteAlert returns the code of a TLS alert the server sent. crypto/tls
// reports it as a *net.OpError "remote error" around its unexported alert
// type (a uint8), or as a tls.AlertError.
func remoteAlert(err error) (uint8, bool) {
	var ae tls.AlertError
	if errors.As(err, &ae) {
		return uint8(ae), true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" && oe.Err != nil {
		v := reflect.ValueOf(oe.Err)
		if v.Kind() == reflect.Uint8 {
			return uint8(v.Uint()), true
		}
		return 0, true
	}
	return 0, false
}

// alertNames are OpenSSL's reason texts for the alerts it names, as
// Python's ssl module prints them ("[SSL: SSLV3_ALERT_HANDSHAKE_FAILURE]
// sslv3 alert handshake failure").
var alertNames = map[uint8]string{
	10:  "sslv3 alert unexpected message",
	20:  "sslv3 alert bad record mac",
	40:  "sslv3 alert handshake failure",
	42:  "sslv3 alert bad certificate",
	43:  "sslv3 alert unsupported certificate",
	44:  "sslv3 alert certificate revoked",
	45:  "sslv3 alert certificate expired",
	46:  "sslv3 alert certificate unknown",
	47:  "sslv3 alert illegal parameter",
	48:  "tlsv1 alert unknown ca",
	49:  "tlsv1 alert access denied",
	50:  "tlsv1 alert decode error",
	51:  "tlsv1 alert decrypt error",
	70:  "tlsv1 alert protocol version",
	71:  "tlsv1 alert insufficient security",
	80:  "tlsv1 alert internal error",
	86:  "tlsv1 alert inappropriate fallback",
	90:  "tlsv1 alert user cancelled",
	109: "tlsv13 alert missing extension",
	112: "tlsv1 unrecognized name",
	116: "tlsv13 alert certificate required",
	120: "tlsv1 alert no application protocol",
}

// sslError renders Python's repr of an ssl.SSLError with OpenSSL's reason
// text: SSLError(1, '[SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca').
// Python adds the C source location ("(_ssl.c:1007)"), which changes with
// its version; cicada leaves it out.
func sslError(class, reason string) string {
	code := strings.ToUpper(strings.ReplaceAll(reason, " ", "_"))
	return class + "(1, " + pyrepr.String("[SSL: "+code+"] "+reason) + ")"
}

// tlsMessage is the Locust-style failure text of the TLS kinds: what
// Python's ssl module raises for the same failure.
func tlsMessage(k Kind, err error) string {
	switch k {
	case TLSTimeout:
		return "TimeoutError('The handshake operation timed out')"
	case TLSVersion:
		if _, ok := remoteAlert(err); ok {
			return sslError("SSLError", "tlsv1 alert protocol version")
		}
		return "SSLError(1, '[SSL: UNSUPPORTED_PROTOCOL] unsupported protocol')"
	case TLSAlert:
		code, _ := remoteAlert(err)
		if name, ok := alertNames[code]; ok {
			return sslError("SSLError", name)
		}
		return sslError("SSLError", "tlsv1 alert "+strconv.Itoa(int(code)))
	case TLSCertificate:
		return "SSLCertVerificationError(1, " + pyrepr.String("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "+certReason(err)) + ")"
	}
	return "SSLError(" + pyrepr.String(errText(err)) + ")"
}

// certReason is OpenSSL's text for why a certificate did not verify.
func certReason(err error) string {
	var (
		hn x509.HostnameError
		ua x509.UnknownAuthorityError
		ci x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &hn):
		if net.ParseIP(hn.Host) != nil {
			return "IP address mismatch, certificate is not valid for '" + hn.Host + "'."
		}
		return "Hostname mismatch, certificate is not valid for '" + hn.Host + "'."
	case errors.As(err, &ua):
		if c := ua.Cert; c != nil && string(c.RawIssuer) == string(c.RawSubject) {
			return "self-signed certificate"
		}
		return "unable to get local issuer certificate"
	case errors.As(err, &ci):
		switch ci.Reason {
		case x509.Expired:
			if strings.Contains(ci.Detail, " is before ") {
				return "certificate is not yet valid"
			}
			return "certificate has expired"
		case x509.NameConstraintsWithoutSANs, x509.CANotAuthorizedForThisName:
			return "permitted subtree violation"
		case x509.IncompatibleUsage:
			return "unsupported certificate purpose"
		}
	}
	return strings.TrimPrefix(strings.TrimPrefix(errText(err), "tls: "), "x509: ")
}
