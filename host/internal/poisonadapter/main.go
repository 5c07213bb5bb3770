// Command poisonadapter is the anthropic-messages adapter with poison
// pills, for the host's containment tests: a record holding the text
// POISON-EMPTY is answered with nothing (a fault the host's answer check
// catches), POISON-CRASH ends the process from a goroutine of its own (a
// crash no recover reaches), POISON-HANG answers only after the call's
// deadline has passed. Every other record is adapted by the real
// anthropic-messages engine, so the context-audit family measures it as
// it would in production.
package main

import (
	"bytes"
	"context"
	"time"

	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

type adapter struct{ anthropic.Adapter }

func (a adapter) Adapt(ctx context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	rec := req.GetRecord()
	switch {
	case bytes.Contains(rec, []byte("POISON-EMPTY")):
		return &pb.AdaptResponse{}
	case bytes.Contains(rec, []byte("POISON-CRASH")):
		done := make(chan struct{})
		go func() { panic("poison") }()
		<-done
	case bytes.Contains(rec, []byte("POISON-HANG")):
		<-ctx.Done()
		time.Sleep(200 * time.Millisecond) // past the host's own deadline for the call
	}
	return a.Adapter.Adapt(ctx, req)
}

func main() { sdk.ServeAdapter(adapter{}) }
