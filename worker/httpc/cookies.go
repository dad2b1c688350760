package httpc

import (
	"bufio"
	"net/http"
	"strings"
	"time"
)

// maxCookies bounds one user's jar; the oldest cookie is dropped first.
const maxCookies = 64

// cookie is one stored cookie of the Client's origin.
type cookie struct {
	name, value string
	path        string
	expires     time.Time // zero: a session cookie
	secure      bool
}

// cookieJar is one user's cookies for the Client's base origin. Only the
// goroutine running Do touches it (Client.busy guards it). It is allocated
// on the first Set-Cookie, so users of cookie-less sites pay nothing.
type cookieJar struct {
	cookies []cookie
}

// set stores the cookie of one Set-Cookie header value received for a
// request to reqPath. Unparsable values are ignored, as browsers do.
func (j *cookieJar) set(line, reqPath string, now time.Time) {
	hc, err := http.ParseSetCookie(line)
	if err != nil {
		return
	}
	c := cookie{name: hc.Name, value: hc.Value, path: hc.Path, secure: hc.Secure}
	if c.path == "" || c.path[0] != '/' {
		c.path = defaultCookiePath(reqPath)
	}
	deleteIt := false
	switch {
	case hc.MaxAge < 0:
		deleteIt = true
	case hc.MaxAge > 0:
		c.expires = now.Add(time.Duration(hc.MaxAge) * time.Second)
	case !hc.Expires.IsZero():
		c.expires = hc.Expires
		deleteIt = !c.expires.After(now)
	}
	for i := range j.cookies {
		if j.cookies[i].name == c.name && j.cookies[i].path == c.path {
			if deleteIt {
				j.cookies = append(j.cookies[:i], j.cookies[i+1:]...)
			} else {
				j.cookies[i] = c
			}
			return
		}
	}
	if deleteIt {
		return
	}
	if len(j.cookies) >= maxCookies {
		j.cookies = append(j.cookies[:0], j.cookies[1:]...)
	}
	j.cookies = append(j.cookies, c)
}

// write writes a Cookie header with the cookies that match path, or
// nothing if none match. Expired cookies are dropped on the way.
func (j *cookieJar) write(bw *bufio.Writer, path string, secure bool, now time.Time) {
	if j == nil {
		return
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	n := 0
	for i := 0; i < len(j.cookies); i++ {
		c := &j.cookies[i]
		if !c.expires.IsZero() && !c.expires.After(now) {
			j.cookies = append(j.cookies[:i], j.cookies[i+1:]...)
			i--
			continue
		}
		if (c.secure && !secure) || !pathMatch(path, c.path) {
			continue
		}
		if n == 0 {
			bw.WriteString("Cookie: ")
		} else {
			bw.WriteString("; ")
		}
		bw.WriteString(c.name)
		bw.WriteByte('=')
		bw.WriteString(c.value)
		n++
	}
	if n > 0 {
		bw.WriteString("\r\n")
	}
}

// defaultCookiePath is RFC 6265 section 5.1.4's default-path.
func defaultCookiePath(reqPath string) string {
	if i := strings.IndexAny(reqPath, "?#"); i >= 0 {
		reqPath = reqPath[:i]
	}
	i := strings.LastIndexByte(reqPath, '/')
	if i <= 0 {
		return "/"
	}
	return reqPath[:i]
}

// pathMatch is RFC 6265 section 5.1.4's path-match.
func pathMatch(reqPath, cookiePath string) bool {
	if reqPath == "" {
		reqPath = "/"
	}
	if !strings.HasPrefix(reqPath, cookiePath) {
		return false
	}
	return len(reqPath) == len(cookiePath) || cookiePath[len(cookiePath)-1] == '/' || reqPath[len(cookiePath)] == '/'
}
