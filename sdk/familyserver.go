package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk/membudget"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
	"github.com/assay-audit/assay/sdk/wire"
)

type familyServer struct {
	pb.UnimplementedFamilyServer
	impl   Family
	broker *plugin.GRPCBroker
	bodies *sharedbody.Receiver
	memory *membudget.Budget
	log    hclog.Logger
	grace  time.Duration
	exit   func()

	mu    sync.Mutex
	hosts map[uint32]pb.HostClient // one dialed connection per host service
}

// hostClient dials the host's service once and reuses it: a plugin has one
// host, and a connection per request would cost a TLS handshake each time.
func (s *familyServer) hostClient(id uint32) (pb.HostClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.hosts[id]; ok {
		return c, nil
	}
	conn, err := s.broker.DialWithOptions(id, wire.DialOptions()...)
	if err != nil {
		return nil, fmt.Errorf("dial host service: %w", err)
	}
	if s.hosts == nil {
		s.hosts = map[uint32]pb.HostClient{}
	}
	s.hosts[id] = pb.NewHostClient(conn)
	return s.hosts[id], nil
}

func (s *familyServer) Describe(context.Context, *pb.DescribeRequest) (*pb.FamilyDescription, error) {
	d := s.impl.Describe()
	if s.bodies != nil {
		d = proto.CloneOf(d)
		d.ReadsSharedBodies = true
	}
	return d, nil
}

// Attach dials the host's service while the broker's offer is open.
func (s *familyServer) Attach(_ context.Context, req *pb.AttachRequest) (*pb.AttachResponse, error) {
	if s.broker == nil || req.GetHostServiceId() == 0 {
		return nil, status.Error(codes.InvalidArgument, "no host service to attach")
	}
	if _, err := s.hostClient(req.GetHostServiceId()); err != nil {
		return nil, status.Error(codes.Unavailable, "host service unreachable")
	}
	return &pb.AttachResponse{}, nil
}

// Run serves one request's stream. A panic inside the family is recovered
// here and reported as a static Internal error: the trace and the panic's
// value (either may hold submission values) never leave the function;
// the log names where it began, for the author.
func (s *familyServer) Run(stream grpc.BidiStreamingServer[pb.HostToFamily, pb.FamilyToHost]) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fn, line := panicSite()
			s.log.Error("family panicked", "panic_function", fn, "panic_line", line)
			err = status.Error(codes.Internal, "family panicked")
		}
	}()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "first message must be start")
	}
	req := Request{
		Op:   start.GetOp(),
		Body: start.GetBody(),
		Now:  time.Unix(0, start.GetNowUnixNano()).UTC(),
	}
	if sb := start.GetSharedBody(); sb != nil {
		var release func()
		if req.Body, release, err = takeShared(stream.Context(), s.log, s.bodies, sb); err != nil {
			return err
		}
		// every send below encodes its message before it returns, so
		// nothing aliasing the mapped body is read after this runs
		defer release()
	}
	// budgeted to the end of the request: validation and measurement
	defer s.memory.Reserve(len(req.Body))()
	defer overrun(stream.Context(), s.grace, s.log, s.exit, len(req.Body))()
	switch start.GetRoute() {
	case pb.Start_PRECHECK:
		req.Route = Precheck
	case pb.Start_OP:
		req.Route = Op
	default:
		return status.Error(codes.InvalidArgument, "unknown route")
	}
	if id := start.GetHostServiceId(); id != 0 && s.broker != nil {
		req.Adapters = &hostAdapters{get: func() (pb.HostClient, error) { return s.hostClient(id) },
			token: start.GetBodyToken(), body: req.Body}
	}
	ctx := stream.Context()
	began := time.Now()
	checked := s.impl.Check(ctx, req)
	overran(ctx, s.log, "check ended after its request was given up", began, len(req.Body))
	if checked.unavailable {
		return status.Error(codes.Unavailable, "a service the family needs is unavailable")
	}
	if req.Route == Precheck && !checked.hasCaller {
		checked.caller, checked.hasCaller = callerOf(req.Body)
	}
	start.Body = nil // the family holds what it parsed; drop the raw bytes
	v, err := validatedOf(checked, req.Route)
	if err != nil {
		s.log.Error("family answered no valid outcome", "reason", status.Convert(err).Message())
		return err
	}
	if err := stream.Send(&pb.FamilyToHost{Msg: &pb.FamilyToHost_Validated{Validated: v}}); err != nil {
		return err
	}
	if checked.measure == nil {
		return nil
	}
	next, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return nil // the host declined (no payment): nothing to measure
	}
	if err != nil {
		return err
	}
	if next.GetProceed() == nil {
		return status.Error(codes.InvalidArgument, "expected proceed")
	}
	began = time.Now()
	out, err := measure(ctx, checked)
	overran(ctx, s.log, "measurement ended after its request was given up", began, len(req.Body))
	if err != nil {
		return err
	}
	return stream.Send(&pb.FamilyToHost{Msg: &pb.FamilyToHost_Report{Report: out}})
}

// validatedOf is a validation as it crosses the wire. An answer no
// constructor makes, or one of the wrong route, is the family's fault,
// told in static words (the host answers 500, nothing charged).
func validatedOf(checked Checked, route Route) (*pb.Validated, error) {
	switch {
	case checked.outcome == 0:
		return nil, status.Error(codes.Internal, "the family's check answered nothing: use sdk.RefuseRequest, CannotMeasure, Assessed or Accept")
	case route == Precheck && checked.measure != nil:
		return nil, status.Error(codes.Internal, "the family answered a pre-check with sdk.Accept: a pre-check answers sdk.Assessed")
	case route == Op && checked.outcome == Accepted && checked.measure == nil:
		return nil, status.Error(codes.Internal, "the family answered an op with sdk.Assessed: an op answers sdk.Accept(measurer)")
	}
	v := &pb.Validated{
		Outcome:          pb.Outcome(checked.outcome),
		Caller:           checked.caller,
		HasCaller:        checked.hasCaller,
		CheckEndUnixNano: time.Now().UnixNano(),
		Code:             checked.code,
	}
	if checked.body != nil {
		var err error
		// canonical, so the host signs it as sent (sdk.IsCanonicalJSON)
		if v.Body, err = CanonicalJSON(checked.body); err != nil {
			return nil, status.Error(codes.Internal, "answer not serialisable")
		}
	}
	return v, nil
}

// measure runs an accepted op's measurement and renders it for the wire.
func measure(ctx context.Context, checked Checked) (*pb.Report, error) {
	rep, err := checked.measure(ctx, time.Now)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		if status.Code(errors.Unwrap(err)) == codes.Unavailable || status.Code(err) == codes.Unavailable {
			// an adapter the host could not reach: transient, like a crash
			return nil, status.Error(codes.Unavailable, "adapter unavailable")
		}
		return nil, status.Error(codes.Internal, "measurement failed")
	}
	if rep.CheckEnd.IsZero() {
		rep.CheckEnd = time.Now()
	}
	out := &pb.Report{CheckEndUnixNano: rep.CheckEnd.UnixNano()}
	if out.Body, err = CanonicalJSON(rep.Body); err != nil {
		return nil, status.Error(codes.Internal, "report not serialisable")
	}
	if out.Ledger, err = ledgerJSON(rep.Ledger); err != nil {
		return nil, status.Error(codes.Internal, "ledger fields not serialisable")
	}
	return out, nil
}

// ledgerJSON is a report's ledger fields as the host reads them: a nil
// map is no fields (an empty object), never JSON null, which a host
// refuses as a line that is not an object.
func ledgerJSON(fields map[string]any) ([]byte, error) {
	if fields == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(fields)
}

// callerOf reads a body's top-level caller member: present says the member
// exists (whatever its type), caller is its value when it is a string.
func callerOf(body []byte) (caller string, present bool) {
	var top struct {
		Caller *json.RawMessage `json:"caller"`
	}
	if json.Unmarshal(body, &top) != nil || top.Caller == nil {
		return "", false
	}
	_ = json.Unmarshal(*top.Caller, &caller)
	return caller, true
}

// hostAdapters reaches the host's service with the connection Attach made;
// a request that never adapts never touches it.
type hostAdapters struct {
	get func() (pb.HostClient, error)
	// token names this request's body at the host; body is the family's
	// copy, for a host that keeps none (token 0)
	token uint64
	body  []byte
	// local serves the request in process instead (LocalSession)
	local AdapterCaller
}

func (h *hostAdapters) Adapt(ctx context.Context, req *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	// record is the bytes the adapter sees: text spans in its answer are
	// offsets into them, and ResolveTextSpans below decodes the escaped
	// ones, so the adapter may answer every JSON string as a span
	record := req.GetRecord()
	req.JsonStringSpans = true
	if h.token != 0 && req.GetRecordSpan() == nil {
		// the record travels as bytes; the token still names the request,
		// so a fault of the adapter's is reported as this request's
		req.BodyToken = h.token
	}
	if span := req.GetRecordSpan(); span != nil {
		rec, err := wire.SpanOf(h.body, span)
		if err != nil {
			return nil, err
		}
		record = rec
		if h.token != 0 {
			req.BodyToken = h.token // the host slices the body it holds
		} else {
			req = &pb.AdaptRequest{FormatId: req.GetFormatId(), FormatVersion: req.GetFormatVersion(), Record: rec, JsonStringSpans: true}
		}
	}
	var resp *pb.AdaptResponse
	if h.local != nil {
		r, err := h.local.Adapt(ctx, req)
		if err != nil {
			return nil, err
		}
		resp = r
	} else {
		client, err := h.get()
		if err != nil {
			return nil, fmt.Errorf("adapt through host: %w", status.Error(codes.Unavailable, "host service unreachable"))
		}
		if resp, err = client.Adapt(ctx, req); err != nil {
			return nil, fmt.Errorf("adapt through host: %w", err)
		}
	}
	if rec := resp.GetRecord(); rec != nil {
		if err := ResolveTextSpans(rec, record); err != nil {
			return nil, fmt.Errorf("adapt through host: %w", err)
		}
	}
	return resp, nil
}
