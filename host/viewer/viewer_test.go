package viewer

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The page is one self-contained document: its policy admits exactly the
// inline style and script it carries (by SHA-256), it names no URL a
// browser would fetch, and it loads nothing from anywhere.
func TestPageIsSelfContained(t *testing.T) {
	w := httptest.NewRecorder()
	New().ServeHTTP(w, httptest.NewRequest("GET", "/view", nil))
	body := w.Body.String()
	csp := w.Header().Get("Content-Security-Policy")
	if w.Header().Get("Content-Type") != "text/html; charset=utf-8" || w.Header().Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers %v", w.Header())
	}
	inline := func(tag string) string {
		m := regexp.MustCompile(`(?s)<`+tag+`>(.*?)</`+tag+`>`).FindAllStringSubmatch(body, -1)
		if len(m) != 1 {
			t.Fatalf("%d <%s> elements, want 1", len(m), tag)
		}
		return m[0][1]
	}
	for _, c := range []struct{ tag, directive string }{{"style", "style-src"}, {"script", "script-src"}} {
		sum := sha256.Sum256([]byte(inline(c.tag)))
		want := c.directive + " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(csp, want+";") {
			t.Errorf("policy %q lacks %q", csp, want)
		}
	}
	for _, d := range []string{"default-src 'none'", "connect-src 'self'", "img-src data:", "form-action 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("policy %q lacks %q", csp, d)
		}
	}
	// every src or href is a data: URL; no script reaches another origin
	for _, m := range regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(body, -1) {
		if !strings.HasPrefix(m[1], "data:") {
			t.Errorf("the page names %q", m[1])
		}
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "XMLHttpRequest", "sendBeacon", "WebSocket"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page uses %s", bad)
		}
	}
	fetches := regexp.MustCompile(`fetch\([^,)]*`).FindAllString(body, -1)
	if len(fetches) != 1 || fetches[0] != "fetch('keys'" {
		t.Errorf("the page fetches %q, want only fetch('keys'", fetches)
	}
}
