// Package sdk is what a plugin author imports: the handshake, the Serve
// helpers that make a plugin's main one call, the Go-level Family and Adapter
// contracts, and the typography and rounding helpers every report uses.
//
// A family plugin implements Family (plain Go, no gRPC) and calls
// ServeFamily; an adapter implements Adapter and calls ServeAdapter. The host
// side of the same wire lives in FamilyPlugin and AdapterPlugin, which the
// host hands to go-plugin.
package sdk

import (
	"math"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the plugin protocol's major version (sdk/proto's
// assay.plugin.v1). Additive changes keep it; a breaking change adds version
// 2 to VersionedPlugins on both sides while version-1 plugins still load.
const ProtocolVersion = 1

// Plugin names inside a plugin binary's plugin set.
const (
	FamilyPluginName  = "family"
	AdapterPluginName = "adapter"
)

// MaxMessageBytes bounds every gRPC message either side sends or receives:
// above the largest body cap (5 MiB) with room for framing, far below gRPC's
// unbounded alternative. grpc-go's default receive limit (4 MiB) is below the
// context-audit cap, so every server and client sets this explicitly.
const MaxMessageBytes = 16 << 20

// Handshake is shared by the host and every plugin. The cookie is not a
// security measure; it stops a user from running a plugin binary by hand.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "ASSAY_PLUGIN",
	MagicCookieValue: "a55ay-plugin-7c1e2b",
}

// ServerOptions are the gRPC options every server in the system uses: plugin
// servers and the host services brokered to plugins.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.MaxConcurrentStreams(math.MaxUint16),
		grpc.ForceServerCodecV2(FrameCodec{}),
	}
}

// DialOptions are the gRPC options every client connection uses.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageBytes),
			grpc.MaxCallSendMsgSize(MaxMessageBytes),
			grpc.ForceCodecV2(FrameCodec{}),
		),
	}
}

func grpcServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(ServerOptions(), opts...)...)
}
