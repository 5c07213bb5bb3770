package sdk

import (
	"context"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Adapter is the contract of a format-adapter plugin, in plain Go: it turns
// one declared format's record into a SessionRecord or a refusal. In a
// plugin, req.Record is the host's pages, mapped, and valid only until
// Adapt returns (its answer is encoded before they are released): an
// adapter keeps nothing of it, or of any string made from it, past Adapt.
type Adapter interface {
	Describe() *pb.AdapterDescription
	Adapt(ctx context.Context, req *pb.AdaptRequest) *pb.AdaptResponse
}
