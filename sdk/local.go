package sdk

import (
	"context"
	"errors"
	"time"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// LocalSession runs one request against a Family in the caller's process,
// with the same messages the plugin boundary carries. Tests and benchmarks
// use it to compare the in-process cost with the cross-process one.
type LocalSession struct {
	Family Family
	Ctx    context.Context
	// Adapters reaches format adapters; nil offers none.
	Adapters AdapterCaller
	checked  Checked
}

// LocalAdapters routes each format id to an adapter in the caller's
// process: the in-process counterpart of the host's adapter routing.
type LocalAdapters map[string]Adapter

// Adapt calls the adapter registered for the request's format.
func (l LocalAdapters) Adapt(ctx context.Context, req *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	a, ok := l[req.GetFormatId()]
	if !ok {
		return nil, errors.New("no adapter for the format")
	}
	return a.Adapt(ctx, req), nil
}

// Start validates.
func (l *LocalSession) Start(s *pb.Start) (*pb.Validated, error) {
	req := Request{Op: s.GetOp(), Body: s.GetBody(), Now: time.Unix(0, s.GetNowUnixNano()).UTC(), Route: Precheck}
	if l.Adapters != nil {
		req.Adapters = &hostAdapters{get: nil, body: s.GetBody(), local: l.Adapters}
	}
	if s.GetRoute() == pb.Start_OP {
		req.Route = Op
	}
	l.checked = l.Family.Check(l.Ctx, req)
	if l.checked.unavailable {
		return nil, status.Error(codes.Unavailable, "a service the family needs is unavailable")
	}
	if req.Route == Precheck && !l.checked.hasCaller {
		l.checked.caller, l.checked.hasCaller = callerOf(req.Body)
	}
	return validatedOf(l.checked, req.Route)
}

// Proceed measures.
func (l *LocalSession) Proceed() (*pb.Report, error) {
	if l.checked.measure == nil {
		return nil, errors.New("nothing to measure")
	}
	return measure(l.Ctx, l.checked)
}

// Close drops the parsed submission.
func (l *LocalSession) Close() { l.checked = Checked{} }
