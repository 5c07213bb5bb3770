// Package wire is the transport between an Assay host and its plugins:
// the go-plugin handshake and plugin set, the gRPC options and codec both
// sides run, and the handles a host holds on a running plugin. A plugin
// author needs none of it (sdk.ServeFamily and sdk.ServeAdapter speak it);
// it is its own package so that the author's package, sdk, holds only
// what an author writes against, and so that a host, or a test that runs
// a built plugin as a host does (sdk/plugintest), speaks exactly the same
// wire as every plugin.
package wire

import (
	"math"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the plugin protocol's major version (sdk/proto's
// assay.plugin.v1). Additive changes keep it; a breaking change adds version
// 2 to VersionedPlugins on both sides while version-1 plugins still load.
const ProtocolVersion = 1

// Plugin names inside a plugin binary's plugin set: the host dispenses a
// plugin by the name of the kind its config says it is, so a binary of the
// other kind fails to dispense rather than answering the wrong service.
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

// DialOptions are the gRPC options every client connection uses, so that
// both ends of every connection agree on the message cap and the codec.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageBytes),
			grpc.MaxCallSendMsgSize(MaxMessageBytes),
			grpc.ForceCodecV2(FrameCodec{}),
		),
	}
}

// OverrunEnv names the environment variable that sets how long a
// request's work may go on after its caller gave up (a Go duration, or
// "off"); DefaultOverrunGrace when unset. The host passes it through to
// every plugin it starts, so an operator sets it once.
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
