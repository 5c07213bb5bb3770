package pluginhost

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Adapter is one supervised format-adapter plugin.
type Adapter struct {
	*proc
	desc *pb.AdapterDescription
}

// StartAdapter starts an adapter plugin pinned like a family.
func StartAdapter(ctx context.Context, spec Spec, opts Options) (*Adapter, error) {
	a := &Adapter{}
	a.proc = newProc(spec, opts, sdk.AdapterPluginName, plugin.PluginSet{sdk.AdapterPluginName: &sdk.AdapterPlugin{}},
		func(raw any) (conn, bool) {
			ac, ok := raw.(*sdk.AdapterConn)
			if !ok {
				return conn{}, false
			}
			return conn{handle: ac, exited: ac.Exited}, true
		})
	err := a.proc.first(ctx, func(ctx context.Context, c conn) error {
		desc, err := c.handle.(*sdk.AdapterConn).Client.Describe(ctx, &pb.DescribeRequest{})
		a.desc = desc
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Description is what the adapter said about itself at first start.
func (a *Adapter) Description() *pb.AdapterDescription { return a.desc }

// Adapt sends one record to the adapter.
func (a *Adapter) Adapt(ctx context.Context, req *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	c, err := a.current(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.handle.(*sdk.AdapterConn).Client.Adapt(ctx, req)
	if err != nil {
		return nil, classify(ctx, c.exited, err)
	}
	return resp, nil
}

// Router sends each format's records to the adapter registered for it.
type Router struct {
	mu       sync.RWMutex
	byFormat map[string]*Adapter
}

// NewRouter returns an empty router.
func NewRouter() *Router { return &Router{byFormat: map[string]*Adapter{}} }

// Add registers an adapter for the format it describes; two adapters for
// one format is a configuration error.
func (r *Router) Add(a *Adapter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := a.desc.GetFormatId()
	if _, dup := r.byFormat[id]; dup {
		return fmt.Errorf("two adapters for format %q", id)
	}
	r.byFormat[id] = a
	return nil
}

// Formats lists the registered format ids.
func (r *Router) Formats() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byFormat))
	for id := range r.byFormat {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// refusalNotAccepted is what a family hears for a format its own criteria
// do not list, whatever adapters are installed.
const refusalNotAccepted = "format_not_accepted"

// Adapt routes a family's request. allowed is the family's accepted
// format list (from its criteria): a format outside it is refused here even
// when an adapter for it is installed.
func (r *Router) Adapt(ctx context.Context, allowed []string, req *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	if !slices.Contains(allowed, req.GetFormatId()) {
		return &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{
			Code: refusalNotAccepted, Message: "the format is not one the criteria accept"}}}, nil
	}
	r.mu.RLock()
	a := r.byFormat[req.GetFormatId()]
	r.mu.RUnlock()
	if a == nil {
		return nil, status.Error(codes.Unavailable, "no adapter installed for an accepted format")
	}
	resp, err := a.Adapt(ctx, req)
	if err != nil {
		return nil, status.Error(codes.Unavailable, "adapter unavailable")
	}
	return resp, nil
}

// hostServer is the Host service a family reaches over the broker.
type hostServer struct {
	pb.UnimplementedHostServer
	router  *Router
	formats []string
}

func (h *hostServer) Adapt(ctx context.Context, req *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	return h.router.Adapt(ctx, h.formats, req)
}

// serveHost offers the Host service on a new family connection, once per
// connection (each AcceptAndServe is a listener). The serving goroutine
// belongs to the connection's broker: it ends when the plugin's connection
// closes.
func (f *Family) serveHost(c conn) {
	var id uint32
	if f.router != nil && len(f.desc.GetFormats()) > 0 && c.broker != nil {
		id = c.broker.NextId()
		hs := &hostServer{router: f.router, formats: f.desc.GetFormats()}
		go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
			s := grpc.NewServer(append(sdk.ServerOptions(), opts...)...)
			pb.RegisterHostServer(s, hs)
			return s
		})
		// the broker keeps its offer open for seconds only: have the family
		// dial now, not at its first adapt
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.StartTimeout)
		_, err := c.handle.(*sdk.FamilyConn).Client.Attach(ctx, &pb.AttachRequest{HostServiceId: id})
		cancel()
		if err != nil {
			f.log.Error("family could not attach to the host service; its adapters are unreachable", "error", err)
			id = 0
		}
	}
	f.mu.Lock()
	f.hostService = id
	f.mu.Unlock()
}
