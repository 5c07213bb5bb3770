package sdk

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk/membudget"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// takeShared maps a shared body's range from the channel, valid until
// release (which the handler defers, so it runs after the handler's last
// send: everything a plugin answers is encoded by then). The error is a
// static status (Unavailable when the descriptor never came, so the host
// treats it like a transient fault, never as the caller's). A failure is
// logged here too: the host sees only the status.
func takeShared(ctx context.Context, log hclog.Logger, bodies *sharedbody.Receiver, sb *pb.SharedBody) (b []byte, release func(), err error) {
	if bodies == nil {
		return nil, nil, status.Error(codes.InvalidArgument, "shared body without a channel")
	}
	began := time.Now()
	b, release, err = bodies.TakeMapped(ctx, sb.GetToken(), sb.GetOffset(), sb.GetLength())
	switch {
	case err == nil:
		return b, release, nil
	case errors.Is(err, sharedbody.ErrRange), errors.Is(err, sharedbody.ErrUnsealed):
		log.Warn("shared body unusable", "length", sb.GetLength(), "waited_ms", time.Since(began).Milliseconds())
		return nil, nil, status.Error(codes.InvalidArgument, "shared body unusable")
	case errors.Is(err, sharedbody.ErrTimeout):
		log.Warn("shared body did not arrive before the deadline", "length", sb.GetLength(), "waited_ms", time.Since(began).Milliseconds())
	default:
		log.Warn("shared body unavailable", "length", sb.GetLength(), "waited_ms", time.Since(began).Milliseconds())
	}
	return nil, nil, status.Error(codes.Unavailable, "shared body unavailable")
}

// overran logs a step that ended after its request was given up (its
// deadline passed, or the caller that waited on it did): the host answered
// 503 already, and only the plugin knows which step was slow.
func overran(ctx context.Context, log hclog.Logger, msg string, began time.Time, bytes int) {
	if ctx.Err() != nil {
		log.Warn(msg, "ms", time.Since(began).Milliseconds(), "bytes", bytes)
	}
}

type adapterServer struct {
	pb.UnimplementedAdapterServer
	impl   Adapter
	bodies *sharedbody.Receiver
	memory *membudget.Budget
	log    hclog.Logger
	grace  time.Duration
	exit   func()
}

func (s *adapterServer) Describe(context.Context, *pb.DescribeRequest) (*pb.AdapterDescription, error) {
	d := s.impl.Describe()
	if s.bodies != nil {
		d = proto.CloneOf(d)
		d.ReadsSharedBodies = true
	}
	return d, nil
}

func (s *adapterServer) Adapt(ctx context.Context, req *pb.AdaptRequest) (resp *pb.AdaptResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			// where, never what: a panic's value may quote the record
			fn, line := panicSite()
			s.log.Error("adapter panicked", "panic_function", fn, "panic_line", line)
			resp, err = nil, status.Error(codes.Internal, "adapter panicked")
		}
	}()
	if sr := req.GetSharedRecord(); sr != nil {
		rec, release, err := takeShared(ctx, s.log, s.bodies, sr)
		if err != nil {
			return nil, err
		}
		// the answer is encoded below, before this runs: nothing read
		// from the mapped record is touched after it
		defer release()
		req.Record, req.SharedRecord = rec, nil
	}
	began := time.Now()
	defer overran(ctx, s.log, "adapt ended after its request was given up", began, len(req.GetRecord()))
	defer overrun(ctx, s.grace, s.log, s.exit, len(req.GetRecord()))()
	defer s.memory.Reserve(len(req.GetRecord()))()
	return encoded(s.impl.Adapt(ctx, req))
}

// encoded is the answer already encoded, as a message whose only content
// is those bytes (kept as unknown fields, which proto writes out
// verbatim): gRPC encodes a handler's answer after the handler returns,
// and by then the mapped record is released (the answer's strings may
// alias it) and the memory budget is back at idle, so a collection would
// fall on the request's path. Encoded here, the work is done within the
// budget and what is left for gRPC is one copy. The wire bytes are the
// same.
func encoded(resp *pb.AdaptResponse) (*pb.AdaptResponse, error) {
	wire, err := proto.Marshal(resp)
	if err != nil {
		return nil, status.Error(codes.Internal, "adapter answer does not encode")
	}
	out := &pb.AdaptResponse{}
	out.ProtoReflect().SetUnknown(wire)
	return out, nil
}

// panicSite is the function and line a recovered panic began in (the
// first frame outside the runtime), for the author to find it; the host
// passes the function's name into its log, as it does a trace's frames.
func panicSite() (function string, line int) {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return f.Function, f.Line
		}
		if !more {
			return "unknown", 0
		}
	}
}
