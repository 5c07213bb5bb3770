// Package freetier admits free pre-checks: per caller wallet (the body's
// caller, a Solana address) or, without one, per client address; limits
// from each family's criteria; counters in the shared store so several
// hosts admit exactly as one would. Keys are HMAC digests under a
// per-database secret, so neither wallets nor addresses sit in the table.
package freetier

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/assay-audit/assay/host/store"
)

// Limits are a family's free allowance.
type Limits struct {
	PerDay      int64
	MinInterval time.Duration
}

// Gate admits free calls.
type Gate struct {
	store *store.Store
	key   []byte

	// every pruneEvery-th call deletes the counters of keys idle longer
	// than keepFor (and than twice the longest interval asked for): a
	// caller is a wallet named in an unauthenticated body, so without it
	// the table grows by one row per wallet ever named
	pruneEvery  int64
	calls       atomic.Int64
	maxInterval atomic.Int64 // nanoseconds
}

// keepFor is how long an idle key's counter is kept: past it, its day is
// not today (the count would restart) and its interval is long over, so
// the row says nothing an absent one would not.
const keepFor = 48 * time.Hour

// New reads the deployment's key from the store.
func New(ctx context.Context, st *store.Store) (*Gate, error) {
	k, err := st.FreeTierKey(ctx)
	if err != nil {
		return nil, err
	}
	return &Gate{store: st, key: k, pruneEvery: 1024}, nil
}

// Caller is who a free call is counted against.
type Caller struct {
	// Wallet is a well-formed Solana address, or "" to count by Addr.
	Wallet string
	// Addr is the client's network address (no port).
	Addr string
}

// Admit admits or refuses one call at now. The allowance is per service;
// usage names the free-use counter (a service version) the call adds to.
func (g *Gate) Admit(ctx context.Context, service, usage string, lim Limits, c Caller, now time.Time) (store.Admission, error) {
	id := "addr:" + c.Addr
	if c.Wallet != "" {
		id = "wallet:" + c.Wallet
	}
	mac := hmac.New(sha256.New, g.key)
	fmt.Fprintf(mac, "%s\x00%s", service, id)
	a, err := g.store.AdmitFree(ctx, usage, hex.EncodeToString(mac.Sum(nil)), now, lim.PerDay, lim.MinInterval)
	if err != nil {
		return a, fmt.Errorf("free tier: %w", err)
	}
	for longest := g.maxInterval.Load(); int64(lim.MinInterval) > longest; longest = g.maxInterval.Load() {
		if g.maxInterval.CompareAndSwap(longest, int64(lim.MinInterval)) {
			break
		}
	}
	if g.calls.Add(1)%g.pruneEvery == 0 {
		idle := max(keepFor, 2*time.Duration(g.maxInterval.Load()))
		// housekeeping: the call was decided and counted; a prune that
		// fails is tried again pruneEvery calls on
		_, _ = g.store.PruneFreeTier(ctx, now.Add(-idle))
	}
	return a, nil
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

var base58Index = func() [256]int8 {
	var t [256]int8
	for i := range t {
		t[i] = -1
	}
	for i, c := range base58Alphabet {
		t[c] = int8(i)
	}
	return t
}()

// DecodeBase58 decodes Bitcoin-alphabet base58 (Solana's). ok is false for
// any character outside the alphabet.
func DecodeBase58(s string) ([]byte, bool) {
	n := new(big.Int)
	radix := big.NewInt(58)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		v := base58Index[s[i]]
		if v < 0 {
			return nil, false
		}
		n.Mul(n, radix)
		n.Add(n, big.NewInt(int64(v)))
	}
	return append(make([]byte, zeros), n.Bytes()...), true
}

// ValidWallet reports whether s is a well-formed Solana address: base58
// decoding to exactly 32 bytes.
func ValidWallet(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	b, ok := DecodeBase58(s)
	return ok && len(b) == 32
}
