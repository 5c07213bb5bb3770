package sdk

import (
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/assay-audit/assay/sdk/membudget"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// ServeFamily is the whole main of a family plugin: it speaks the handshake
// on stdout and serves f until the host shuts it down.
func ServeFamily(f Family) {
	log := Logger()
	serve(log, plugin.PluginSet{FamilyPluginName: &FamilyPlugin{Impl: f, Bodies: sharedbody.FromEnv(), Memory: membudget.ForFamily(), Log: log,
		OverrunGrace: overrunGrace()}})
}

// ServeAdapter is the whole main of a format-adapter plugin.
func ServeAdapter(a Adapter) {
	log := Logger()
	serve(log, plugin.PluginSet{AdapterPluginName: &AdapterPlugin{Impl: a, Bodies: sharedbody.FromEnv(), Memory: membudget.ForAdapter(), Log: log,
		OverrunGrace: overrunGrace()}})
}

// exitOverrun ends a plugin whose request overran (DefaultOverrunGrace).
func exitOverrun() { os.Exit(70) }

func serve(log hclog.Logger, set plugin.PluginSet) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: set},
		GRPCServer:       grpcServer,
		Logger:           log,
	})
}

// Logger is the logger a plugin should use: hclog JSON on stderr, which the
// host parses line by line. Log metadata only (sizes, counts, durations):
// the host keeps a line's message and its numbers and booleans, and
// reduces every string value to its length.
func Logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "plugin",
		Level:      hclog.Info,
		Output:     os.Stderr,
		JSONFormat: true,
	})
}
