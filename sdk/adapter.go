package sdk

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Adapter is the contract of a format-adapter plugin, in plain Go: it turns
// one declared format's record into a SessionRecord or a refusal.
type Adapter interface {
	Describe() *pb.AdapterDescription
	Adapt(ctx context.Context, req *pb.AdaptRequest) *pb.AdaptResponse
}

// AdapterPlugin is the go-plugin glue for the Adapter service.
type AdapterPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Adapter
}

// GRPCServer registers the adapter service on the plugin's server.
func (p *AdapterPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterAdapterServer(s, &adapterServer{impl: p.Impl})
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

type adapterServer struct {
	pb.UnimplementedAdapterServer
	impl Adapter
}

func (s *adapterServer) Describe(context.Context, *pb.DescribeRequest) (*pb.AdapterDescription, error) {
	return s.impl.Describe(), nil
}

func (s *adapterServer) Adapt(ctx context.Context, req *pb.AdaptRequest) (resp *pb.AdaptResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Error(codes.Internal, "adapter panicked")
		}
	}()
	return s.impl.Adapt(ctx, req), nil
}
