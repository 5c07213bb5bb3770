package canaryproof

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPlantReachesEveryStringAndObject(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	out := c.Plant([]byte(`{"chunks":["aGVsbG8="],"text":"x","n":1,"nested":[{"k":"v"}]}`))
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(v["chunks"].([]any)[0].(string))
	if string(raw) != "hello "+c.Value {
		t.Errorf("a base64 string carries %q", raw)
	}
	if v["text"] != "x "+c.Value || v[c.Value] != c.Value || v["n"] != float64(1) {
		t.Errorf("planted %s", out)
	}
	if inner := v["nested"].([]any)[0].(map[string]any); inner["k"] != "v "+c.Value || inner[c.Value] != c.Value {
		t.Errorf("nested object %v", inner)
	}
	if got := c.Plant([]byte("not json")); !strings.HasSuffix(string(got), c.Value) {
		t.Errorf("a non-JSON body: %q", got)
	}
}

// Every form is found where it stands: the canary, its base64, its
// SHA-256, and the digest of a planted body inside a log line; a file
// older than the scan's start is not read.
func TestFindsEveryForm(t *testing.T) {
	c, _ := New()
	body := c.Plant([]byte(`{"a":"b"}`))
	var digest string
	for d, label := range c.digests {
		if strings.HasSuffix(label, "sha256 hex") {
			digest = d
		}
	}
	for name, data := range map[string]string{
		"raw":           "x " + c.Value + " y",
		"base64":        "token=" + base64.StdEncoding.EncodeToString([]byte(c.Value)),
		"body digest":   `2026-12-02 [INFO] request: sha256=` + digest + ` bytes=` + string(rune(len(body))),
		"canary sha256": c.forms["raw sha256 hex"],
	} {
		if found := c.Find([]byte(data)); len(found) == 0 {
			t.Errorf("%s not found", name)
		}
	}
	if found := c.Find([]byte("nothing here: " + strings.Repeat("ab", 32))); len(found) != 0 {
		t.Errorf("found %v in clean data", found)
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
