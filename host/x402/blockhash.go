package x402

import (
	"context"
	"sync"
	"time"

	"github.com/assay-audit/assay/host/solanarpc"
)

// blockhashCache is a node's latest blockhash, read at most once every
// period: every 402 carries one, and asking the node for each would put
// its latency (and its rate limit) on every 402. While the node does not
// answer, the last one read is given: a payment built on a stale one
// fails its simulation and is refused, nothing taken.
type blockhashCache struct {
	rpc   *solanarpc.Client
	every time.Duration

	mu      sync.Mutex
	hash    solanarpc.Blockhash
	fetched time.Time
}

func (b *blockhashCache) get(ctx context.Context) (solanarpc.Blockhash, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hash.Hash != "" && time.Since(b.fetched) < b.every {
		return b.hash, true
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if h, err := b.rpc.LatestBlockhash(ctx); err == nil && h.Hash != "" {
		b.hash, b.fetched = h, time.Now()
	}
	return b.hash, b.hash.Hash != ""
}

// forget drops the blockhash the node no longer knows.
func (b *blockhashCache) forget() {
	b.mu.Lock()
	b.hash = solanarpc.Blockhash{}
	b.mu.Unlock()
}
