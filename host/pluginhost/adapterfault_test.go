package pluginhost

import (
	"testing"
	"time"
)

// An adapter's counts cover the last minute only: faults leave it as
// time passes, so a faulting state ends by itself.
func TestHealthCountsTheLastMinute(t *testing.T) {
	var h health
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for i := range 6 {
		h.record(t0.Add(time.Duration(i)*time.Second), FaultEmpty)
	}
	h.record(t0.Add(15*time.Second), "")
	if good, faulted, last := h.counts(t0.Add(20 * time.Second)); good != 1 || faulted != 6 || last != FaultEmpty {
		t.Fatalf("at 20 s: %d good, %d faulted, last %q", good, faulted, last)
	}
	// the faults' bucket (0–10 s) has left the window at 60 s; the good
	// answer's (10–20 s) has not
	if good, faulted, _ := h.counts(t0.Add(61 * time.Second)); good != 1 || faulted != 0 {
		t.Fatalf("at 61 s: %d good, %d faulted", good, faulted)
	}
	// a bucket reused a window later starts from zero
	h.record(t0.Add(62*time.Second), FaultCrashed)
	if good, faulted, last := h.counts(t0.Add(62 * time.Second)); good != 1 || faulted != 1 || last != FaultCrashed {
		t.Fatalf("at 62 s: %d good, %d faulted, last %q", good, faulted, last)
	}
	if good, faulted, _ := h.counts(t0.Add(10 * time.Minute)); good != 0 || faulted != 0 {
		t.Fatalf("ten minutes on: %d good, %d faulted", good, faulted)
	}
}
