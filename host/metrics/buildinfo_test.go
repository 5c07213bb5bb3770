package metrics

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// The build's identity is one series of value 1, labelled with the version
// the caller passes and the Go it was built with, at /metrics and never
// under a service's own path (it carries no service).
func TestBuildInfo(t *testing.T) {
	m := New()
	m.BuildInfo("v9.9.9-3-gabcdef0-dirty")
	scrape := func(service string) string {
		rec := httptest.NewRecorder()
		m.Handler(service).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, err := io.ReadAll(rec.Result().Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	want := `assay_build_info{goversion="` + runtime.Version() + `",version="v9.9.9-3-gabcdef0-dirty"} 1`
	body := scrape("")
	if !strings.Contains(body, "\n"+want+"\n") {
		t.Errorf("/metrics has no line %s:\n%s", want, body)
	}
	if !strings.Contains(body, "# TYPE assay_build_info gauge\n") {
		t.Error("assay_build_info is not a gauge")
	}
	if strings.Contains(scrape("s"), "assay_build_info") {
		t.Error("a service's metrics carry assay_build_info, which has no service label")
	}
}

// A version that is not UTF-8 (a stamp is whatever the linker was given)
// is published with its bad bytes replaced, not a panic at start.
func TestBuildInfoOddVersion(t *testing.T) {
	m := New()
	m.BuildInfo("v1\xff")
	rec := httptest.NewRecorder()
	m.Handler("").ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if !strings.Contains(string(body), `version="v1?"} 1`) {
		t.Errorf("no assay_build_info for the repaired version:\n%s", body)
	}
}
