package ratelog

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A failure repeated every second for two and a half minutes is logged
// three times (at once, then after each minute, with what was not
// logged), and its end once.
func TestRepeatsAreLoggedOncePerInterval(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	l := New(hclog.New(&hclog.LoggerOptions{Output: &out}), time.Minute, func() time.Time { return clock })
	for i := 0; i < 150; i++ {
		l.Warn("store unreachable", "error", "refused")
		clock = clock.Add(time.Second)
	}
	l.Cleared("store unreachable", "store reachable again")
	l.Cleared("store unreachable", "store reachable again")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	if strings.Contains(lines[0], "repeats_not_logged") || !strings.Contains(lines[1], "repeats_not_logged=59") ||
		!strings.Contains(lines[2], "repeats_not_logged=59") || !strings.Contains(lines[3], "store reachable again: repeats_not_logged=29") {
		t.Errorf("lines:\n%s", out.String())
	}
	// a new failure after the clear is logged at once
	out.Reset()
	l.Error("store unreachable")
	if !strings.Contains(out.String(), "[ERROR] store unreachable") {
		t.Errorf("after the clear: %q", out.String())
	}
}
