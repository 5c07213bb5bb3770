// Package freetier admits free pre-checks: per caller wallet (one the
// caller proved with x402's sign-in-with-x, package siwx) or, without one,
// per client address; limits from each family's criteria; counters in the
// shared store so several hosts admit exactly as one would. Keys are HMAC
// digests under a per-database secret, so neither wallets nor addresses
// sit in the table.
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

	"github.com/assay-audit/assay/host/siwx"
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
	// signIn proves callers' wallets, its key derived from the same
	// per-database secret: every host of the fleet checks the others'
	// challenges
	signIn *siwx.Service

	// every pruneEvery-th call deletes the counters of keys idle longer
	// than keepFor (and than twice the longest interval asked for): one
	// row per wallet or address ever counted otherwise stays for good
	pruneEvery  int64
	calls       atomic.Int64
	maxInterval atomic.Int64 // nanoseconds
}

// keepFor is how long an idle key's counter is kept: past it, its day is
// not today (the count would restart) and its interval is long over, so
// the row says nothing an absent one would not.
const keepFor = 48 * time.Hour

// Option is a choice New makes otherwise by default.
type Option func(*options)

type options struct{ publicURL string }

// PublicURL pins the sign-in challenges to the host's public base URL
// (the operator's public_url; "" changes nothing): they bind its host
// and scheme instead of the Host each request names.
func PublicURL(u string) Option { return func(o *options) { o.publicURL = u } }

// New reads the deployment's key from the store.
func New(ctx context.Context, st *store.Store, opts ...Option) (*Gate, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	k, err := st.FreeTierKey(ctx)
	if err != nil {
		return nil, err
	}
	signIn, err := siwx.New(k, st, o.publicURL)
	if err != nil {
		return nil, fmt.Errorf("free tier: %w", err)
	}
	return &Gate{store: st, key: k, signIn: signIn, pruneEvery: 1024}, nil
}

// SignIn issues the sign-in challenges and checks the proofs that make a
// pre-check count against a wallet.
func (g *Gate) SignIn() *siwx.Service { return g.signIn }

// Caller is who a free call is counted against.
type Caller struct {
	// Wallet is a Solana address the caller proved it holds (SignIn), or
	// "" to count by Addr.
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
