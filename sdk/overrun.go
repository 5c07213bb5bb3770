package sdk

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/sdk/wire"
)

// overrunGrace reads wire.OverrunEnv: 0 means never.
func overrunGrace() time.Duration {
	v, set := os.LookupEnv(wire.OverrunEnv)
	if !set || v == "" {
		return wire.DefaultOverrunGrace
	}
	if v == "off" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return wire.DefaultOverrunGrace
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
