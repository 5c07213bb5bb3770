package x402

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MemoPrefix begins the memo every 402 of this host asks its payer's
// transaction to carry (extra.memo, which the official client and
// facilitator honour): "assay:" and 32 hex digits. The first 16 are a
// random nonce, which keeps two payments of one price under one blockhash
// apart (identical transactions would share a signature); the last 16 are
// a MAC of the nonce and the route (service and op) under the store's own
// key, so the transaction the payer signed names the route its 402 came
// from, and every host of the fleet can refuse it on any other route
// before anything is verified, with nothing kept per 402 (routeMemo). The
// prefix lets `assay ledger reconcile` tell, among the transfers to
// pay_to, the ones paid to this host. It says nothing of the request: no
// submission byte, no hash of one.
const MemoPrefix = "assay:"

const (
	memoNonceBytes = 8
	memoMACBytes   = 8
)

// routeMemo is a fresh memo for one 402 of a route.
func routeMemo(key []byte, service, op string) string {
	nonce := make([]byte, memoNonceBytes)
	_, _ = rand.Read(nonce) // never fails: the runtime aborts first (Go 1.24+)
	return MemoPrefix + hex.EncodeToString(nonce) + hex.EncodeToString(memoMAC(key, service, op, nonce))
}

// memoOfRoute reports whether memo is one this store's hosts made for a
// 402 of the route: false for another route's, another store's, and a
// memo made before memos named their route (a 402 issued by an earlier
// build: paid anew, nothing lost).
func memoOfRoute(key []byte, memo, service, op string) bool {
	if !IsHostMemo(memo) {
		return false
	}
	raw, _ := hex.DecodeString(strings.TrimPrefix(memo, MemoPrefix))
	return hmac.Equal(raw[memoNonceBytes:], memoMAC(key, service, op, raw[:memoNonceBytes]))
}

func memoMAC(key []byte, service, op string, nonce []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("assay-route-memo/1\x00" + service + "\x00" + op + "\x00"))
	m.Write(nonce)
	return m.Sum(nil)[:memoMACBytes]
}

// IsHostMemo reports whether s has the shape of this host's memos.
func IsHostMemo(s string) bool {
	nonce, ok := strings.CutPrefix(s, MemoPrefix)
	if !ok || len(nonce) != 2*(memoNonceBytes+memoMACBytes) {
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
