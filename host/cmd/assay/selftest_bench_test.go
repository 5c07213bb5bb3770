package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
)

// BenchmarkLaunchSelfTest is what `assay serve` adds to its start: every
// family's whole corpus (602 cases) against its plugin, the families side
// by side, as launchSelfTests runs them.
func BenchmarkLaunchSelfTest(b *testing.B) {
	ctx := context.Background()
	log := hclog.NewNullLogger()
	router := pluginhost.NewRouter()
	for _, pkg := range []string{"plugins/adapter-letta-af", "plugins/adapter-anthropic-messages", "plugins/adapter-generic-message-list"} {
		path := testhost.Plugin(b, pkg)
		sum, _ := pluginhost.PinOf(path)
		a, err := pluginhost.StartAdapter(ctx, pluginhost.Spec{Name: filepath.Base(pkg), Path: path, SHA256: sum},
			pluginhost.Options{Logger: log, Env: []string{"PATH=" + os.Getenv("PATH")}})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		if err := router.Add(a); err != nil {
			b.Fatal(err)
		}
	}
	var services []server.Service
	for _, pkg := range []string{"plugins/stream-divergence", "plugins/lifecycle-analytics", "plugins/scope-hygiene", "plugins/context-audit"} {
		path := testhost.Plugin(b, pkg)
		sum, _ := pluginhost.PinOf(path)
		f, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: filepath.Base(pkg), Path: path, SHA256: sum},
			pluginhost.Options{Logger: log, Env: []string{"PATH=" + os.Getenv("PATH")}}, router)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		services = append(services, server.Service{Desc: f.Description(), Backend: server.FamilyBackend{Family: f}})
	}
	keys, err := signing.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		board := servicestate.New(nil, nil, nil)
		launchSelfTests(ctx, services, keys, board, log)
		for _, svc := range services {
			if st := board.State(keyOf(svc)); st.Stopped {
				b.Fatalf("%s: %s", svc.Desc.GetService(), st.Reason)
			}
		}
	}
}
