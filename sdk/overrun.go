package sdk

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// OverrunEnv names the environment variable that sets how long a
// request's work may go on after its caller gave up (a Go duration, or
// "off"); DefaultOverrunGrace when unset.
const OverrunEnv = "ASSAY_OVERRUN_GRACE"

// DefaultOverrunGrace is the grace when OverrunEnv is unset.
//
// Why a plugin ends itself: an engine's work does not stop when its
// context does (Go cannot stop a goroutine, and a loop deep in a metric
// does not poll a context). When the host's deadline passes it answers 503
// and charges nothing, yet a runaway computation, the kind a crafted input
// finds, would go on taking a core for as long as it runs, free to whoever
// sent it. Past the grace the process exits; the host restarts it, and any
// other request in it is answered 503 (retryable, not charged).
const DefaultOverrunGrace = 10 * time.Second

// overrunGrace reads OverrunEnv: 0 means never.
func overrunGrace() time.Duration {
	v, set := os.LookupEnv(OverrunEnv)
	if !set || v == "" {
		return DefaultOverrunGrace
	}
	if v == "off" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return DefaultOverrunGrace
	}
	return d
}

// overrun watches one request: once ctx is done, the work has grace to
// return (call the stop it returns) before exit runs. A zero grace
// watches nothing.
func overrun(ctx context.Context, grace time.Duration, log hclog.Logger, exit func(), bytes int) (stop func()) {
	if grace <= 0 || exit == nil {
		return func() {}
	}
	var mu sync.Mutex
	var timer *time.Timer
	stopped := false
	unwatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		timer = time.AfterFunc(grace, func() {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			log.Error("a request's work outlived its caller by the grace; the process exits for the host to restart it",
				"grace_ms", grace.Milliseconds(), "bytes", bytes)
			exit()
		})
	})
	return func() {
		unwatch()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
	}
}
