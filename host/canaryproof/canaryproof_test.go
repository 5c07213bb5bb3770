package canaryproof

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file older than the scan's start is not read.
func TestScanDirReadsFilesSince(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old, fresh := filepath.Join(dir, "old.log"), filepath.Join(dir, "sub", "fresh.log")
	_ = os.MkdirAll(filepath.Dir(fresh), 0o700)
	_ = os.WriteFile(old, []byte(c.Value), 0o600)
	_ = os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	_ = os.WriteFile(fresh, []byte(c.Value), 0o600)
	if f := c.ScanDir(dir, time.Time{}); len(f) != 2 {
		t.Errorf("every file: %v", f)
	}
	if f := c.ScanDir(dir, time.Now().Add(-time.Minute)); len(f) != 1 || !strings.Contains(f[0].Surface, "fresh.log") {
		t.Errorf("files since a minute ago: %v", f)
	}
}

// An answer that copies a submitted string is a finding that names the
// request; one that prints it under a member the family's criteria let it
// print as submitted (an exempt member) is not; headers are searched too.
func TestSendSearchesTheAnswers(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	echo := func(member string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			out, _ := json.Marshal(map[string]any{"kind": "report", "labels": map[string]any{member: in["note"]}})
			_, _ = w.Write(out)
		})
	}
	reqs := []Request{{Method: "POST", Path: "/svc/run", Body: c.Plant([]byte(`{"note":"hello"}`))}}
	if _, f := c.Send(context.Background(), echo("sample"), reqs, []string{"scope"}); len(f) != 1 || !strings.Contains(f[0].String(), "the answer to POST /svc/run (200)") {
		t.Errorf("an echo outside the exempt members: %v", f)
	}
	if _, f := c.Send(context.Background(), echo("scope"), reqs, []string{"scope"}); len(f) != 0 {
		t.Errorf("an echo under an exempt member: %v", f)
	}
	header := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Seen", r.URL.RawQuery) })
	if _, f := c.Send(context.Background(), header, reqs, nil); len(f) != 1 || !strings.Contains(f[0].String(), "header X-Seen") {
		t.Errorf("an echo in a header: %v", f)
	}
}
