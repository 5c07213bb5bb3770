package sdk

import (
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/assay-audit/assay/sdk/membudget"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
	"github.com/assay-audit/assay/sdk/wire"
)

// ServeFamily is the whole main of a family plugin: it speaks the handshake
// on stdout and serves f until the host shuts it down.
func ServeFamily(f Family) {
	log := Logger()
	bodies, memory, grace := sharedbody.FromEnv(), membudget.ForFamily(), overrunGrace()
	serve(log, plugin.PluginSet{wire.FamilyPluginName: &wire.FamilyPlugin{Service: func(broker *plugin.GRPCBroker) pb.FamilyServer {
		return &familyServer{impl: f, broker: broker, bodies: bodies, memory: memory, log: log, grace: grace, exit: exitOverrun}
	}}})
}

// ServeAdapter is the whole main of a format-adapter plugin.
func ServeAdapter(a Adapter) {
	log := Logger()
	serve(log, plugin.PluginSet{wire.AdapterPluginName: &wire.AdapterPlugin{Service: &adapterServer{impl: a,
		bodies: sharedbody.FromEnv(), memory: membudget.ForAdapter(), log: log, grace: overrunGrace(), exit: exitOverrun}}})
}

// exitOverrun ends a plugin whose request overran (wire.DefaultOverrunGrace).
func exitOverrun() { os.Exit(70) }

func serve(log hclog.Logger, set plugin.PluginSet) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{wire.ProtocolVersion: set},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(wire.ServerOptions(), opts...)...)
		},
		Logger: log,
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
