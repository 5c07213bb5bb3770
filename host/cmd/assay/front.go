package main

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/sdk"
)

// frontDoor is the listener's handler from the first instant: the host
// binds before it opens its store and starts its plugins, so a restart
// holds its port and answers at once. Until the host's own handler is in
// place, /healthz says alive, /readyz says 503 with the step under way,
// and every other request is refused 503 host_starting with Retry-After
// (signed once the keys are loaded); nothing is read or charged.
type frontDoor struct {
	handler atomic.Pointer[http.Handler]
	keys    atomic.Pointer[signing.Keyring]
	step    atomic.Pointer[string]
	version string
}

func newFrontDoor(version string) *frontDoor {
	f := &frontDoor{version: version}
	f.at("store")
	return f
}

// at names the start's step under way ("store", "keys", "payments and
// plugins").
func (f *frontDoor) at(step string) { f.step.Store(&step) }

// withKeys signs the starting refusals from now on.
func (f *frontDoor) withKeys(k *signing.Keyring) { f.keys.Store(k) }

// open hands every request to h from now on.
func (f *frontDoor) open(h http.Handler) { f.handler.Store(&h) }

// starting is the step under way, for /readyz ("" once the host's handler
// answers).
func (f *frontDoor) starting() string {
	if f.handler.Load() != nil {
		return ""
	}
	return *f.step.Load()
}

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/healthz":
		_, _ = w.Write([]byte(`{"status":"ok"}`))
		return
	case r.Method == http.MethodGet && r.URL.Path == "/readyz":
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(readiness.Report{Version: f.version, Starting: []string{"host: " + *f.step.Load()},
			Store: readiness.Check{Reason: "not checked yet"}, Keys: readiness.Check{Reason: "not loaded yet"}, Services: []readiness.ServiceCheck{},
			Adapters: nil})
		return
	}
	answer := map[string]any{"kind": "refusal", "issued_at": sdk.Instant(time.Now()),
		"error": map[string]any{"code": "host_starting", "message": "the host is starting (its store, keys and plugins); nothing was read or charged; send it again after Retry-After"}}
	body, err := json.Marshal(answer)
	if k := f.keys.Load(); k != nil {
		body, err = k.Sign(answer)
	}
	if err != nil {
		body = []byte(`{"error":{"code":"host_starting"}}`)
	}
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}
