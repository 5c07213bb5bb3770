package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/signing"
)

// Before the host's handler is in place the front door says alive on
// /healthz, not ready on /readyz (naming the step and the build), and
// refuses everything else 503 host_starting with Retry-After, signed once
// the keys are loaded; then every request is the host's handler's.
func TestTheFrontDoorAnswersWhileTheHostStarts(t *testing.T) {
	f := newFrontDoor("v1.2.3")
	ask := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(`{"x":1}`)))
		return rec
	}
	if r := ask("GET", "/healthz"); r.Code != 200 {
		t.Errorf("/healthz while starting: %d", r.Code)
	}
	f.at("payments and plugins")
	r := ask("GET", "/readyz")
	var ready struct {
		Ready    bool     `json:"ready"`
		Version  string   `json:"version"`
		Starting []string `json:"starting"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &ready); err != nil || r.Code != 503 || ready.Ready || ready.Version != "v1.2.3" ||
		len(ready.Starting) != 1 || ready.Starting[0] != "host: payments and plugins" {
		t.Errorf("/readyz while starting: %d %s", r.Code, r.Body)
	}
	r = ask("POST", "/stream-divergence/compare")
	if r.Code != 503 || r.Header().Get("Retry-After") != "1" || !strings.Contains(r.Body.String(), `"code":"host_starting"`) ||
		strings.Contains(r.Body.String(), `"x"`) {
		t.Errorf("a paid route before the keys: %d %v %s", r.Code, r.Header(), r.Body)
	}
	keys, err := signing.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.withKeys(keys)
	r = ask("POST", "/stream-divergence/precheck")
	jwks, _ := json.Marshal(keys.JWKS())
	if _, err := signing.Verify(r.Body.Bytes(), jwks); r.Code != 503 || err != nil {
		t.Errorf("a refusal once the keys are loaded: %d %v %s", r.Code, err, r.Body)
	}
	f.open(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if r := ask("GET", "/readyz"); r.Code != http.StatusTeapot || f.starting() != "" {
		t.Errorf("after open: %d, starting %q", r.Code, f.starting())
	}
}
