package wire

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// errNoService is a plugin set built without the service it should serve.
var errNoService = errors.New("wire: a plugin set without a service to register")

// FamilyPlugin is the go-plugin glue for the Family service: both sides
// name it in their plugin set, the plugin to serve the family and the host
// to reach it. A plugin sets Service (sdk.ServeFamily does); the host
// leaves it nil and receives a *FamilyConn.
type FamilyPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Service builds the family service from the plugin's broker (the
	// family dials the host's service back through it); nil on the host.
	Service func(broker *plugin.GRPCBroker) pb.FamilyServer
}

// GRPCServer registers the family service on the plugin's server.
func (p *FamilyPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Service == nil {
		return errNoService
	}
	pb.RegisterFamilyServer(s, p.Service(broker))
	return nil
}

// GRPCClient hands the host a connection to the family. ctx is cancelled by
// go-plugin when the plugin process exits, which is how the host learns of
// a crash without polling.
func (p *FamilyPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &FamilyConn{Client: pb.NewFamilyClient(c), Broker: broker, Exited: ctx.Done()}, nil
}

// FamilyConn is the host's handle on one running family plugin: the
// client, and the broker the host offers its own service on.
type FamilyConn struct {
	Client pb.FamilyClient
	Broker *plugin.GRPCBroker
	// Exited is closed when the plugin process has gone.
	Exited <-chan struct{}
}

// AdapterPlugin is the go-plugin glue for the Adapter service, as
// FamilyPlugin is for the family's. A plugin sets Service
// (sdk.ServeAdapter does); the host leaves it nil and receives an
// *AdapterConn.
type AdapterPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Service is the adapter service a plugin serves; nil on the host.
	Service pb.AdapterServer
}

// GRPCServer registers the adapter service on the plugin's server.
func (p *AdapterPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Service == nil {
		return errNoService
	}
	pb.RegisterAdapterServer(s, p.Service)
	return nil
}

// GRPCClient hands the host a connection to the adapter.
func (p *AdapterPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &AdapterConn{Client: pb.NewAdapterClient(c), Conn: c, Exited: ctx.Done()}, nil
}

// AdapterConn is the host's handle on one running adapter plugin.
type AdapterConn struct {
	Client pb.AdapterClient
	// Conn is the connection itself, for calls whose answer the host
	// relays as a Frame.
	Conn *grpc.ClientConn
	// Exited is closed when the plugin process has gone.
	Exited <-chan struct{}
}
