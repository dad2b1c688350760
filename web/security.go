package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// Browser protections cicada adds to Locust's web UI (see the package doc,
// "Browser protections").

// baseCSP is the Content-Security-Policy of every response that is not an
// HTML page of ours (JSON, CSV, text, error pages): nothing may load, and
// nothing may frame it.
const baseCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// setSecurityHeaders sets the headers every response carries: no framing
// (clickjacking), no MIME sniffing, and baseCSP until a page replaces it
// with pageCSP.
func setSecurityHeaders(h http.Header) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", baseCSP)
	h.Set("Referrer-Policy", "same-origin")
}

// pageCSP returns the Content-Security-Policy for one of our HTML pages
// (the dashboard, the report): scripts, styles, images and fetches from
// this server only, plus the page's own inline <script> and <style>
// elements, allowed by the SHA-256 of their exact text so that nothing
// injected into the page can run. Images may also be data: URLs (the
// dashboard's empty favicon).
func pageCSP(page []byte) string {
	var b strings.Builder
	b.WriteString("default-src 'none'; script-src 'self'")
	for _, s := range inlineElements(page, "script") {
		b.WriteString(" '" + hashSource(s) + "'")
	}
	b.WriteString("; style-src 'self'")
	for _, s := range inlineElements(page, "style") {
		b.WriteString(" '" + hashSource(s) + "'")
	}
	b.WriteString("; img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	return b.String()
}

// hashSource is the CSP hash source of an inline element's text.
func hashSource(text []byte) string {
	sum := sha256.Sum256(text)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// inlineElements returns the text of every <tag ...>text</tag> element of
// page that has no src attribute. Our pages are built from our templates,
// so a plain scan is enough; data blocks (type="application/json") are
// returned too, which allows nothing since they never run.
func inlineElements(page []byte, tag string) [][]byte {
	open, end := []byte("<"+tag), []byte("</"+tag+">")
	var out [][]byte
	for {
		i := bytes.Index(page, open)
		if i < 0 {
			return out
		}
		page = page[i+len(open):]
		if len(page) == 0 || (page[0] != '>' && page[0] != ' ') {
			continue // another element, like <scripts>
		}
		gt := bytes.IndexByte(page, '>')
		if gt < 0 {
			return out
		}
		attrs := page[:gt]
		page = page[gt+1:]
		j := bytes.Index(page, end)
		if j < 0 {
			return out
		}
		if !bytes.Contains(attrs, []byte("src=")) {
			out = append(out, page[:j])
		}
		page = page[j+len(end):]
	}
}

// sameOrigin wraps a state-changing route (POST /swarm, GET /stop, GET
// /stats/reset) so that a browser cannot be made to call it from another
// site: a request whose Sec-Fetch-Site header is other than "same-origin"
// or "none" (typed into the address bar), or, from browsers without
// Sec-Fetch-Site, whose Origin or Referer names another host than the one
// it was sent to, is refused with 403. Requests without these headers (curl,
// Locust's scripts, other programs) pass.
func sameOrigin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if why := crossSite(r); why != "" {
			writeText(w, http.StatusForbidden, "Forbidden: cross-site request refused ("+why+")\n")
			return
		}
		h(w, r)
	}
}

// crossSite returns why r comes from another site, or "" if it does not.
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return ""
	case "":
	default:
		return "Sec-Fetch-Site: " + site
	}
	if o := r.Header.Get("Origin"); o != "" {
		if !sameHost(o, r.Host) {
			return "Origin: " + o
		}
		return ""
	}
	if ref := r.Header.Get("Referer"); ref != "" && !sameHost(ref, r.Host) {
		return "Referer from another host"
	}
	return ""
}

// sameHost reports whether the URL u (an Origin or Referer) names host
// (host[:port], as in the request's Host header).
func sameHost(u, host string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false // "null" and other opaque origins
	}
	return strings.EqualFold(p.Host, host)
}
