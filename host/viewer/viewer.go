// Package viewer serves the report viewer: one static page that reads a
// signed answer in the browser, checks its Ed25519 signature over the
// RFC 8785 bytes with WebCrypto, and draws it in the criteria's own words.
//
// The page is one document with its style and script inline, so loading
// it is one request; its Content-Security-Policy pins the inline parts by
// hash and lets the page reach nothing but its own origin (for /keys), so
// "the report never leaves the browser" is enforced by the browser, not
// only promised by the page.
package viewer

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
)

var (
	//go:embed page.html
	pageHTML string
	//go:embed viewer.css
	css string
	//go:embed viewer.js
	script string
)

// Page is the built viewer, ready to serve.
type Page struct {
	body []byte
	csp  string
}

// New assembles the page from its embedded parts and the policy that
// admits exactly them.
func New() *Page {
	body := strings.Replace(pageHTML, "/*STYLE*/", css, 1)
	body = strings.Replace(body, "/*SCRIPT*/", script, 1)
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src " + hashSource(script),
		"style-src " + hashSource(css),
		// the key set at /keys is the one request the page may make
		"connect-src 'self'",
		// the favicon is a data: URL, so the browser asks for no file
		"img-src data:",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
	return &Page{body: []byte(body), csp: csp}
}

func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// ServeHTTP writes the page.
func (p *Page) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", p.csp)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(p.body)
}
