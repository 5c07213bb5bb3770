package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/wire"
)

// Adapter is one supervised format-adapter plugin.
type Adapter struct {
	*proc
	desc   *pb.AdapterDescription
	health health
}

// StartAdapter starts an adapter plugin pinned like a family.
func StartAdapter(ctx context.Context, spec Spec, opts Options) (*Adapter, error) {
	a := &Adapter{}
	a.proc = newProc(spec, opts, wire.AdapterPluginName, plugin.PluginSet{wire.AdapterPluginName: &wire.AdapterPlugin{}},
		func(raw any) (conn, bool) {
			ac, ok := raw.(*wire.AdapterConn)
			if !ok {
				return conn{}, false
			}
			return conn{handle: ac, exited: ac.Exited, calls: &callCount{}}, true
		})
	err := a.proc.first(ctx, func(ctx context.Context, c conn) error {
		desc, err := c.handle.(*wire.AdapterConn).Client.Describe(ctx, &pb.DescribeRequest{})
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
	f, err := a.AdaptFrame(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := &pb.AdaptResponse{}
	if err := proto.Unmarshal(f, resp); err != nil {
		return nil, fmt.Errorf("%w: adapter answer does not decode", ErrFailed)
	}
	return resp, nil
}

// AdaptFrame sends one record to the adapter and keeps its answer as the
// bytes it arrived in, for the family (the host relays, never reads).
func (a *Adapter) AdaptFrame(ctx context.Context, req *pb.AdaptRequest) (wire.Frame, error) {
	return a.adaptFrame(ctx, req, nil)
}

// adaptFrame is AdaptFrame with the record, when rec is set, a range of a
// shared body: passed as the file to an adapter that reads shared bodies,
// read out for one that does not.
func (a *Adapter) adaptFrame(ctx context.Context, req *pb.AdaptRequest, rec *heldRange) (wire.Frame, error) {
	c, err := a.live()
	var re *RestartingError
	if errors.As(err, &re) {
		f := a.fault(CauseRestarting, "the adapter's process is restarting; the record was not sent to it")
		f.RetryAfter = re.RetryAfter
		return nil, &FaultError{f}
	}
	if err != nil {
		return nil, err
	}
	recordLen := uint64(len(req.GetRecord()))
	if rec != nil {
		recordLen = rec.len
	}
	if rec != nil {
		if a.desc.GetReadsSharedBodies() && c.share != nil {
			token, err := c.share.Send(rec.body)
			if err != nil {
				return nil, fmt.Errorf("%w: shared body channel", ErrUnavailable)
			}
			req.SharedRecord = &pb.SharedBody{Token: token, Offset: rec.offset, Length: rec.len}
		} else {
			req.Record = make([]byte, rec.len)
			if _, err := rec.body.ReadAt(req.Record, int64(rec.offset)); err != nil {
				return nil, fmt.Errorf("%w: shared body unreadable", ErrFailed)
			}
		}
	}
	var f wire.Frame
	began := time.Now()
	a.sent.Store(true)
	defer c.calls.enter()()
	actx, cancel := callContext(ctx, recordLen)
	defer cancel()
	if err := c.handle.(*wire.AdapterConn).Conn.Invoke(actx, pb.Adapter_Adapt_FullMethodName, req, &f,
		grpc.ForceCodecV2(wire.FrameCodec{})); err != nil {
		return nil, a.callFailed(ctx, actx, c, err, began, req.SharedRecord != nil)
	}
	if cause, detail := checkAnswer(f, recordLen); cause != "" {
		return nil, a.faulted(a.fault(cause, detail))
	}
	a.health.record(time.Now(), "")
	a.served.Store(true)
	return f, nil
}

// callContext is the adapter call's context. Its deadline is the
// record's own (AdaptBudget of its size), and never later than the
// request's deadline less a margin (a tenth of the time left, at most
// adapterMargin): an adapter that hangs is named to its caller as the
// adapter's within seconds, not when the request's own deadline ends it
// as nobody's.
func callContext(ctx context.Context, recordLen uint64) (context.Context, context.CancelFunc) {
	dl := time.Now().Add(AdaptBudget(recordLen))
	if rdl, ok := ctx.Deadline(); ok {
		if cut := rdl.Add(-min(adapterMargin, time.Until(rdl)/10)); cut.Before(dl) {
			dl = cut
		}
	}
	return context.WithDeadline(ctx, dl)
}

// AdaptBudget is how long an adapter may take over a record of n bytes:
// 2 s, and 1 s more per MiB (a 5 MiB record: 7 s). The shipped adapters
// take under 0.1 s for a 5 MiB record on a 2-core machine
// (docs/benchmarks.md): the budget is some 70 times that, room for a
// loaded machine and the race detector, and a hang is still named in
// seconds.
func AdaptBudget(n uint64) time.Duration {
	return 2*time.Second + time.Duration(n)*time.Second/(1<<20)
}

// adapterMargin bounds how much earlier than its request an adapter call
// ends.
const adapterMargin = 2 * time.Second

// exitWait is how long a call that broke waits to learn whether the
// process ended: the connection can break an instant before the process
// is seen to exit.
const exitWait = 2 * time.Second

// callFailed says why an adapter call failed: the request's caller gave
// up (no fault), the adapter hung past its deadline, its process ended
// while it held the record, or it failed the call itself. The last three
// are the adapter's faults, counted against it and reported for the
// request; a crashed or hung call is never sent again.
func (a *Adapter) callFailed(ctx, actx context.Context, c conn, err error, began time.Time, shared bool) error {
	ms := time.Since(began).Milliseconds()
	code := status.Code(err)
	kind := "failed"
	switch {
	case ctx.Err() != nil:
		// the family gave up first, or the request's own deadline passed
		kind = "canceled"
	case errors.Is(actx.Err(), context.DeadlineExceeded) || code == codes.DeadlineExceeded:
		kind = FaultDeadline
	case code == codes.Unavailable || code == codes.Canceled:
		kind = "unavailable"
		t := time.NewTimer(exitWait)
		select {
		case <-c.exited:
			kind = FaultCrashed
		case <-t.C:
		}
		t.Stop()
	}
	a.log.Warn("adapter call failed", "kind", kind, "shared", shared, "ms", ms)
	switch kind {
	case "canceled":
		return classify(ctx, c.exited, err)
	case FaultDeadline:
		return a.faulted(a.fault(FaultDeadline, fmt.Sprintf("no answer within %d ms", ms)))
	case FaultCrashed:
		a.log.Error("adapter process ended while it held a record; it is restarted, and the request is not sent to it again",
			"format", a.desc.GetFormatId(), "binary", filepath.Base(a.spec.Path), "version", a.desc.GetAdapterVersion())
		f := a.fault(FaultCrashed, "the adapter's process ended while it held this record")
		f.Mates = int(c.calls.mates())
		return a.faulted(f)
	case "unavailable":
		return fmt.Errorf("%w: %s", ErrUnavailable, code)
	}
	// the adapter's own failure (a panic, an error it chose): the same
	// record fails the same way again
	return a.faulted(a.fault(FaultFailed, "the adapter's call failed (a panic or an error of its own; its log says which)"))
}

// Router sends each format's records to the adapter registered for it.
type Router struct {
	mu       sync.RWMutex
	byFormat map[string]*Adapter
	// accepted are the formats the loaded families' criteria accept
	accepted map[string]bool
}

// NewRouter returns an empty router.
func NewRouter() *Router {
	return &Router{byFormat: map[string]*Adapter{}, accepted: map[string]bool{}}
}

// Accept records formats a loaded family's criteria accept: Status then
// says which adapters a request can reach, the same for /readyz as for
// the catalog.
func (r *Router) Accept(formats ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range formats {
		r.accepted[f] = true
	}
}

// DuplicateFormatError is a second adapter for a format another one
// already serves: the host keeps the first (by pin order) and leaves this
// one out, naming both.
type DuplicateFormatError struct {
	Format string
	// Kept and KeptBinary name the adapter that serves the format.
	Kept, KeptBinary string
}

func (e *DuplicateFormatError) Error() string {
	return fmt.Sprintf("format %q is already served by adapter %s (%s), the first by pin order", e.Format, e.Kept, e.KeptBinary)
}

// Add registers an adapter for the format it describes; a second adapter
// for one format is a *DuplicateFormatError, and the first stays.
func (r *Router) Add(a *Adapter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := a.desc.GetFormatId()
	if first, dup := r.byFormat[id]; dup {
		return &DuplicateFormatError{Format: id, Kept: first.spec.Name, KeptBinary: filepath.Base(first.spec.Path)}
	}
	r.byFormat[id] = a
	return nil
}

// AdapterStatus is one loaded adapter as an operator or a caller sees it.
type AdapterStatus struct {
	Format  string `json:"format"`
	Family  string `json:"family"`
	Version string `json:"adapter_version"`
	// Binary and SHA256Prefix name the file serving the format: its name
	// in the plugin folder and the first 12 hex digits of its pin, enough
	// to tell two builds apart.
	Binary       string `json:"binary"`
	SHA256Prefix string `json:"sha256_prefix"`
	// State is StateServing, StateFaulting or StateRestarting.
	State string `json:"state"`
	// Answers and Faults are its good answers and faults in the last
	// FaultWindow; LastFaultCause the cause of its last fault since start.
	Answers        int    `json:"answers_last_minute"`
	Faults         int    `json:"faults_last_minute"`
	LastFaultCause string `json:"last_fault_cause,omitempty"`
	// Restarts counts its process's restarts since the host started.
	Restarts int `json:"restarts"`
	// Accepted says a loaded family's criteria accept the format (false:
	// no request reaches the adapter): Router.Accept, and the server for
	// its own services.
	Accepted bool `json:"accepted_by_loaded_criteria"`
}

// Status lists the loaded adapters by format id.
func (r *Router) Status() []AdapterStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	now := time.Now()
	out := make([]AdapterStatus, 0, len(r.byFormat))
	for id, a := range r.byFormat {
		good, faulted, last := a.health.counts(now)
		out = append(out, AdapterStatus{Format: id, Family: a.desc.GetFamily(), Version: a.desc.GetAdapterVersion(), State: a.State(),
			Binary: filepath.Base(a.spec.Path), SHA256Prefix: a.spec.SHA256[:min(len(a.spec.SHA256), 12)],
			Answers: good, Faults: faulted, LastFaultCause: last, Restarts: a.Restarts(), Accepted: r.accepted[id]})
	}
	slices.SortFunc(out, func(a, b AdapterStatus) int { return strings.Compare(a.Format, b.Format) })
	return out
}

// Adapters lists the loaded adapters by format id, for their metrics.
func (r *Router) Adapters() []*Adapter {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Adapter, 0, len(r.byFormat))
	for _, id := range slices.Sorted(maps.Keys(r.byFormat)) {
		out = append(out, r.byFormat[id])
	}
	return out
}

// RecordSchema is the record schema the adapter for format describes (nil:
// no adapter, or none described).
func (r *Router) RecordSchema(format string) []byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if a := r.byFormat[format]; a != nil {
		return a.desc.GetRecordSchema()
	}
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

// Adapt routes a family's request. allowed is the family's accepted
// format list (from its criteria): a format outside it is refused here even
// when an adapter for it is installed.
func (r *Router) Adapt(ctx context.Context, allowed []string, req *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	f, err := r.AdaptFrame(ctx, allowed, req)
	if err != nil {
		return nil, err
	}
	resp := &pb.AdaptResponse{}
	if err := proto.Unmarshal(f, resp); err != nil {
		return nil, status.Error(codes.Unavailable, "adapter unavailable")
	}
	return resp, nil
}

// AdaptFrame is Adapt with the answer kept as wire bytes.
func (r *Router) AdaptFrame(ctx context.Context, allowed []string, req *pb.AdaptRequest) (wire.Frame, error) {
	f, err := r.adaptFrame(ctx, allowed, req, nil)
	if errors.As(err, new(*FaultError)) {
		return nil, status.Error(codes.Unavailable, "adapter unavailable")
	}
	return f, err
}

func (r *Router) adaptFrame(ctx context.Context, allowed []string, req *pb.AdaptRequest, rec *heldRange) (wire.Frame, error) {
	if !slices.Contains(allowed, req.GetFormatId()) {
		// what a family hears for a format its own criteria do not list,
		// whatever adapters are installed
		b, err := proto.Marshal(sdk.Refuse(sdk.FormatNotAccepted, "the format is not one the criteria accept"))
		return b, err
	}
	r.mu.RLock()
	a := r.byFormat[req.GetFormatId()]
	r.mu.RUnlock()
	if a == nil {
		return nil, status.Error(codes.Unavailable, "no adapter installed for an accepted format")
	}
	f, err := a.adaptFrame(ctx, req, rec)
	if errors.As(err, new(*FaultError)) {
		return nil, err // the host service records it for the request
	}
	if err != nil {
		return nil, status.Error(codes.Unavailable, "adapter unavailable")
	}
	return f, nil
}

// hostServer is the Host service a family reaches over the broker.
type hostServer struct {
	router  *Router
	formats []string
	bodies  *bodies
}

// adaptFrame serves Host.Adapt with the adapter's answer relayed as the
// bytes it arrived in.
func (h *hostServer) adaptFrame(ctx context.Context, req *pb.AdaptRequest) (*wire.Frame, error) {
	token := req.GetBodyToken()
	req, rec, err := h.resolve(req)
	if err != nil {
		return nil, err
	}
	f, err := h.router.adaptFrame(ctx, h.formats, req, rec)
	var fe *FaultError
	if errors.As(err, &fe) {
		// the request's session reports it; the family hears only that
		// the adapter is unavailable, and never sees the answer
		h.bodies.fault(token, fe.Fault)
		return nil, status.Error(codes.Unavailable, "adapter unavailable")
	}
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// hostFrameService is the Host service as registered on the brokered
// server: the generated descriptor's shape, with an Adapt handler that
// answers a Frame (the server runs wire.FrameCodec, so the family reads
// ordinary protobuf).
var hostFrameService = grpc.ServiceDesc{
	ServiceName: "assay.plugin.v1.Host",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Adapt",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(pb.AdaptRequest)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := srv.(*hostServer)
			if interceptor == nil {
				return h.adaptFrame(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: pb.Host_Adapt_FullMethodName}
			return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return h.adaptFrame(ctx, req.(*pb.AdaptRequest))
			})
		},
	}},
	Metadata: "plugin.proto",
}

// resolve turns a record span into the record: bytes sliced from the body
// the host holds for the request (no copy), or a range of its shared file.
func (h *hostServer) resolve(req *pb.AdaptRequest) (*pb.AdaptRequest, *heldRange, error) {
	span := req.GetRecordSpan()
	if span == nil {
		// a family's own record travels as bytes, never as a file
		return &pb.AdaptRequest{FormatId: req.GetFormatId(), FormatVersion: req.GetFormatVersion(), Record: req.GetRecord(), JsonStringSpans: req.GetJsonStringSpans()}, nil, nil
	}
	rec, shared, ok := h.bodies.span(req.GetBodyToken(), span)
	if !ok {
		return nil, nil, status.Error(codes.InvalidArgument, "record span names no open request's body")
	}
	return &pb.AdaptRequest{FormatId: req.GetFormatId(), FormatVersion: req.GetFormatVersion(), Record: rec, JsonStringSpans: req.GetJsonStringSpans()}, shared, nil
}

// serveHost offers the Host service on a new family connection, once per
// connection (each AcceptAndServe is a listener). The serving goroutine
// belongs to the connection's broker: it ends when the plugin's connection
// closes.
func (f *Family) serveHost(c conn) {
	var id uint32
	if f.router != nil && len(f.desc.GetFormats()) > 0 && c.broker != nil {
		id = c.broker.NextId()
		hs := &hostServer{router: f.router, formats: f.desc.GetFormats(), bodies: f.bodies}
		go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(append(wire.ServerOptions(), opts...), grpc.ForceServerCodecV2(wire.FrameCodec{}))
			s := grpc.NewServer(opts...)
			s.RegisterService(&hostFrameService, hs)
			return s
		})
		// the broker keeps its offer open for seconds only: have the family
		// dial now, not at its first adapt
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.StartTimeout)
		_, err := c.handle.(*wire.FamilyConn).Client.Attach(ctx, &pb.AttachRequest{HostServiceId: id})
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
