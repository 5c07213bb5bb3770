package x402

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// MemoPrefix begins the memo every 402 of this host asks its payer's
// transaction to carry (extra.memo, which the official client and
// facilitator honour): "assay:" and 32 random hex digits. The nonce keeps
// two payments of one price under one blockhash apart (identical
// transactions would share a signature); the prefix lets `assay ledger
// reconcile` tell, among the transfers to pay_to, the ones paid to this
// host. It says nothing of the request: no submission byte, no hash of one.
const MemoPrefix = "assay:"

const memoNonceBytes = 16

// newMemo is a fresh memo for one 402.
func newMemo() string {
	b := make([]byte, memoNonceBytes)
	_, _ = rand.Read(b) // never fails: the runtime aborts first (Go 1.24+)
	return MemoPrefix + hex.EncodeToString(b)
}

// IsHostMemo reports whether s has the shape of this host's memos.
func IsHostMemo(s string) bool {
	nonce, ok := strings.CutPrefix(s, MemoPrefix)
	if !ok || len(nonce) != 2*memoNonceBytes {
		return false
	}
	_, err := hex.DecodeString(nonce)
	return err == nil && strings.ToLower(nonce) == nonce
}

// withMemo is r with extra.memo set to memo (removed when memo is empty: a
// payment made before memos were asked for), extra copied, r unchanged.
func (r Requirements) withMemo(memo string) Requirements {
	extra := make(map[string]any, len(r.Extra))
	for k, v := range r.Extra {
		extra[k] = v
	}
	delete(extra, "memo")
	if memo != "" {
		extra["memo"] = memo
	}
	r.Extra = extra
	return r
}
