package sdk

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/sdk/wire"
)

// A request whose work returns within the grace after its caller gave up
// leaves the process alone; one that does not ends it, once, with a line
// that says so; a zero grace watches nothing.
func TestOverrunEndsOnlyWorkThatOutlivesItsCaller(t *testing.T) {
	watch := func(grace time.Duration) (cancel func(), stop func(), exited chan struct{}, out *bytes.Buffer) {
		out = &bytes.Buffer{}
		log := hclog.New(&hclog.LoggerOptions{Output: out, JSONFormat: true})
		exited = make(chan struct{}, 2)
		ctx, cancel := context.WithCancel(context.Background())
		stop = overrun(ctx, grace, log, func() { exited <- struct{}{} }, 1234)
		return cancel, stop, exited, out
	}
	// returned in time
	cancel, stop, exited, _ := watch(50 * time.Millisecond)
	cancel()
	stop()
	select {
	case <-exited:
		t.Error("work that returned within the grace ended the process")
	case <-time.After(300 * time.Millisecond):
	}
	// finished before its caller gave up
	cancel, stop, exited, _ = watch(20 * time.Millisecond)
	stop()
	cancel()
	select {
	case <-exited:
		t.Error("work that finished first ended the process")
	case <-time.After(200 * time.Millisecond):
	}
	// never returned
	cancel, stop, exited, out := watch(20 * time.Millisecond)
	defer stop()
	cancel()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("work that outlived its caller by the grace did not end the process")
	}
	if line := out.String(); !strings.Contains(line, "outlived its caller") || !strings.Contains(line, `"bytes":1234`) || !strings.Contains(line, `"grace_ms":20`) {
		t.Errorf("log: %s", line)
	}
	// a zero grace watches nothing
	cancel, stop, exited, _ = watch(0)
	cancel()
	select {
	case <-exited:
		t.Error("a zero grace ended the process")
	case <-time.After(100 * time.Millisecond):
	}
	stop()
}

func TestOverrunGraceFromTheEnvironment(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": wire.DefaultOverrunGrace, "off": 0, "250ms": 250 * time.Millisecond, "-1s": wire.DefaultOverrunGrace, "soon": wire.DefaultOverrunGrace,
	} {
		t.Setenv(wire.OverrunEnv, v)
		if got := overrunGrace(); got != want {
			t.Errorf("%s=%q: %v, want %v", wire.OverrunEnv, v, got, want)
		}
	}
}
