package launchproof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/assay-audit/assay/host/canaryproof"
	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/selftest"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk/canary"
)

// RunCorpus runs a family's own corpus (the one its criteria pin) against
// its plugin behind a host of its own: the same routes, payments off, a
// free tier in a temporary store (the corpus is synthetic: nothing
// submitted reaches that file), answers signed with keys and checked
// against them.
func RunCorpus(ctx context.Context, svc server.Service, keys *signing.Keyring) (selftest.Result, error) {
	h, c, done, err := scratchHost(ctx, svc, keys)
	if err != nil {
		return selftest.Result{}, err
	}
	defer done()
	current := func() []byte {
		jwks, _ := json.Marshal(keys.JWKS())
		return jwks
	}
	return selftest.Run(ctx, h.handler, current, c), nil
}

// scratch is a host of one service over a temporary store.
type scratch struct {
	handler http.Handler
	store   *store.Store
}

// scratchHost is a family's corpus, parsed and pinned, and a host of its
// own to send it to, writing its paid answers' ledger lines to a
// temporary store; done removes the store.
func scratchHost(ctx context.Context, svc server.Service, keys *signing.Keyring) (*scratch, *selftest.Corpus, func(), error) {
	c, err := selftest.Parse(svc.Desc.GetCorpus(), svc.Desc.GetCorpusSha256())
	if err != nil {
		if len(svc.Desc.GetCorpus()) == 0 {
			return nil, nil, nil, errors.New("the family ships no corpus")
		}
		return nil, nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "assay-selftest-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("launchproof: %w", err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(tmp, "selftest.db"))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, nil, err
	}
	done := func() { st.Close(); os.RemoveAll(tmp) }
	free, err := freetier.New(ctx, st)
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	h := server.New(server.Config{Services: []server.Service{svc}, Keys: keys, FreeTier: free, Payments: payment.Off{}, Metrics: metrics.New(),
		Ledger: &ledger.Writer{Store: st}, ExplainWithheld: true})
	return &scratch{handler: h, store: st}, c, done, nil
}

// logSettles is how long the plugins' stderr takes to reach the host log
// (asynchronously, through go-plugin) before a custody check searches it.
const logSettles = 500 * time.Millisecond

// custody plants a canary in every case of the family's corpus and
// probes its tripwires (selftest.CustodyWith), then searches every
// surface the family's answers and output reach: the answers (outside the
// members its criteria exempt), the host's log while the check ran (tap:
// nil, not searched), the scratch store's rows (its ledger lines carry the
// family's ledger fields) and the files it left in the temp dir.
func custody(ctx context.Context, svc server.Service, keys *signing.Keyring, tap *Tap) (canary.Result, []canary.Finding, error) {
	can, err := canaryproof.New()
	if err != nil {
		return canary.Result{}, nil, fmt.Errorf("launchproof: %w", err)
	}
	h, c, done, err := scratchHost(ctx, svc, keys)
	if err != nil {
		return canary.Result{}, nil, err
	}
	began := time.Now()
	offset := 0
	if tap != nil {
		offset = tap.Begin()
	}
	r := selftest.CustodyWith(ctx, h.handler, c, svc.Desc.GetTripwires(), can.Canary)
	var found []canary.Finding
	rows, err := h.store.DumpText(ctx)
	done()
	if err != nil {
		if tap != nil {
			tap.End(offset)
		}
		return r, nil, err
	}
	found = append(found, can.Scan("the scratch store's rows", []byte(rows))...)
	if tap != nil {
		select {
		case <-ctx.Done():
		case <-time.After(logSettles):
		}
		found = append(found, can.Scan("the host log", tap.End(offset))...)
	}
	found = append(found, can.ScanDir(os.TempDir(), began)...)
	return r, found, ctx.Err()
}
