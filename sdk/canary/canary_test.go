package canary

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
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
// SHA-256, and the digest of a planted body inside a log line.
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
}
