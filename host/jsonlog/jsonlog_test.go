package jsonlog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A duration is its seconds, on the logger and on those derived from it;
// other values are as they were.
func TestDurationsAreSeconds(t *testing.T) {
	var out bytes.Buffer
	l := Seconds(hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true}))
	l.Info("shutting down", "grace", 60*time.Second, "n", 3)
	l.Named("plugin").With("backoff", 1500*time.Millisecond).Warn("restart", "after", 250*time.Millisecond)
	var lines []map[string]any
	for _, raw := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["grace"] != 60.0 || lines[0]["n"] != 3.0 ||
		lines[1]["backoff"] != 1.5 || lines[1]["after"] != 0.25 || lines[1]["@module"] != "plugin" {
		t.Errorf("lines: %v", lines)
	}
}
