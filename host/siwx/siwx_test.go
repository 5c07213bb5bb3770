package siwx

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/solana"
)

// memNonces is a store's nonce records in memory.
type memNonces struct {
	mu     sync.Mutex
	kept   map[string]time.Time
	sweeps int
}

func (m *memNonces) UseSignInNonce(_ context.Context, nonce string, keep time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.kept[nonce]; ok {
		return false, nil
	}
	m.kept[nonce] = keep
	return true, nil
}

func (m *memNonces) SweepSignInNonces(_ context.Context, now time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweeps++
	var n int64
	for k, keep := range m.kept {
		if keep.Before(now) {
			delete(m.kept, k)
			n++
		}
	}
	return n, nil
}

func newService() (*Service, *memNonces) {
	m := &memNonces{kept: map[string]time.Time{}}
	s, _ := New([]byte("a store's secret, 32 bytes long!"), m, "")
	return s, m
}

const (
	mainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	devnet  = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
)

var target = Target{Domain: "audit.example.com", URI: "https://audit.example.com/stream-divergence/precheck", Chain: mainnet}

// The message is Sign-In With Solana's, line for line as the extension's
// specification prints its example (and the official TypeScript
// formatSIWSMessage builds it): the statement with a blank line after it
// only when there is one, Chain ID the CAIP-2 reference, the optional
// lines in their order, no trailing newline.
func TestMessageIsSIWS(t *testing.T) {
	p := &Proof{Domain: "api.example.com", Address: "BSmWDgE9ex6dZYbiTsJGcwMEgFp8q4aWh92hdErQPeVW",
		Statement: "Sign in to access premium data", URI: "https://api.example.com/premium-data", Version: "1",
		ChainID: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", Type: "ed25519", Nonce: "a1b2c3d4e5f67890a1b2c3d4e5f67890",
		IssuedAt: "2024-01-15T10:30:00.000Z", ExpirationTime: "2024-01-15T10:35:00.000Z",
		Resources: []string{"https://api.example.com/premium-data"}}
	// the specification's example, as printed there
	want := "api.example.com wants you to sign in with your Solana account:\n" +
		"BSmWDgE9ex6dZYbiTsJGcwMEgFp8q4aWh92hdErQPeVW\n" +
		"\n" +
		"Sign in to access premium data\n" +
		"\n" +
		"URI: https://api.example.com/premium-data\n" +
		"Version: 1\n" +
		"Chain ID: 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\n" +
		"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
		"Issued At: 2024-01-15T10:30:00.000Z\n" +
		"Expiration Time: 2024-01-15T10:35:00.000Z\n" +
		"Resources:\n" +
		"- https://api.example.com/premium-data"
	if got := p.Message(); got != want {
		t.Fatalf("message:\n%q\nwant\n%q", got, want)
	}
	bare := &Proof{Domain: "h", Address: "A", URI: "http://h/p", Version: "1", ChainID: "solana:X", Nonce: "n", IssuedAt: "t",
		NotBefore: "nb", RequestID: "r", ExpirationTime: "e"}
	want = "h wants you to sign in with your Solana account:\nA\n\nURI: http://h/p\nVersion: 1\nChain ID: X\nNonce: n\nIssued At: t\n" +
		"Expiration Time: e\nNot Before: nb\nRequest ID: r"
	if got := bare.Message(); got != want {
		t.Fatalf("message without statement or resources:\n%q\nwant\n%q", got, want)
	}
}

// A challenge is the extension as the specification declares it: 32 hex
// characters of nonce, five minutes from issuedAt (milliseconds, Z),
// the request's URL as its one resource, the host's chain as ed25519,
// and the proof's schema.
func TestChallengeShape(t *testing.T) {
	s, _ := newService()
	now := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	e, err := s.Challenge(target, now)
	if err != nil {
		t.Fatal(err)
	}
	i := e.Info
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(i.Nonce) || i.IssuedAt != "2026-11-29T12:00:00.123Z" ||
		i.ExpirationTime != "2026-11-29T12:05:00.123Z" || i.Domain != "audit.example.com" || i.URI != target.URI ||
		i.Version != "1" || len(i.Resources) != 1 || i.Resources[0] != target.URI || i.Statement == "" {
		t.Fatalf("info: %+v", i)
	}
	if len(e.SupportedChains) != 1 || e.SupportedChains[0] != (Chain{ChainID: mainnet, Type: "ed25519"}) {
		t.Fatalf("supportedChains: %+v", e.SupportedChains)
	}
	var sch struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(e.Schema, &sch); err != nil || fmt.Sprint(sch.Required) != "[domain address uri version chainId type nonce issuedAt signature]" {
		t.Fatalf("schema: %s", e.Schema)
	}
	if again, _ := s.Challenge(target, now); again.Info.Nonce == i.Nonce {
		t.Error("two challenges share a nonce")
	}
}

// handProof is a wallet's proof for a challenge made without this
// package's Message or Sign: the SIWS text written out, signed with
// crypto/ed25519, the JSON header built member by member.
func handProof(t *testing.T, e Extension, key ed25519.PrivateKey, edit func(m map[string]any)) string {
	t.Helper()
	addr := solana.EncodeBase58(key.Public().(ed25519.PublicKey))
	i := e.Info
	msg := fmt.Sprintf("%s wants you to sign in with your Solana account:\n%s\n\n%s\n\nURI: %s\nVersion: 1\nChain ID: %s\nNonce: %s\nIssued At: %s\nExpiration Time: %s\nResources:\n- %s",
		i.Domain, addr, i.Statement, i.URI, e.SupportedChains[0].ChainID[len("solana:"):], i.Nonce, i.IssuedAt, i.ExpirationTime, i.URI)
	m := map[string]any{"domain": i.Domain, "address": addr, "statement": i.Statement, "uri": i.URI, "version": "1",
		"chainId": e.SupportedChains[0].ChainID, "type": "ed25519", "nonce": i.Nonce, "issuedAt": i.IssuedAt,
		"expirationTime": i.ExpirationTime, "resources": []string{i.URI},
		"signature": solana.EncodeBase58(ed25519.Sign(key, []byte(msg)))}
	if edit != nil {
		edit(m)
	}
	raw, _ := json.Marshal(m)
	return base64.StdEncoding.EncodeToString(raw)
}

func wallet(seed byte) ed25519.PrivateKey {
	var s [32]byte
	s[0] = seed
	return ed25519.NewKeyFromSeed(s[:])
}

// A proof signed over the hand-written message is accepted, for the
// address that signed it; its nonce is spent once; the package's own
// client (Sign, Encode) makes proofs the checker accepts.
func TestProofChecksAndSpendsOnce(t *testing.T) {
	s, _ := newService()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	e, _ := s.Challenge(target, now)
	key := wallet(1)
	p, err := s.Check(handProof(t, e, key, nil), target, now.Add(time.Minute))
	if err != nil || p.Address != solana.EncodeBase58(key.Public().(ed25519.PublicKey)) {
		t.Fatalf("a valid proof: %v %+v", err, p)
	}
	ctx := context.Background()
	if err := s.Spend(ctx, p, now.Add(time.Minute)); err != nil {
		t.Fatalf("spend: %v", err)
	}
	if err := s.Spend(ctx, p, now.Add(2*time.Minute)); !errors.Is(err, Replayed) {
		t.Fatalf("spent twice: %v, want replayed", err)
	}
	e2, _ := s.Challenge(target, now)
	own, err := Sign(e2, key)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := own.Encode()
	if p, err := s.Check(h, target, now); err != nil || p.Address != own.Address {
		t.Fatalf("the package's own proof: %v", err)
	}
}

// Every way a proof is not this host's, this request's or now's is
// refused with its own reason.
func TestProofRefusals(t *testing.T) {
	s, _ := newService()
	other, _ := New([]byte("another fleet's secret"), &memNonces{kept: map[string]time.Time{}}, "")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	e, _ := s.Challenge(target, now)
	key := wallet(1)
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	foreign, _ := other.Challenge(target, now)
	ahead, _ := s.Challenge(target, now.Add(time.Minute))
	slightly, _ := s.Challenge(target, now.Add(10*time.Second))
	for _, c := range []struct {
		name   string
		header string
		t      Target
		at     time.Time
		want   error
	}{
		{"wrong domain", handProof(t, e, key, nil), Target{"evil.example", target.URI, mainnet}, now, WrongDomain},
		{"domain edited", handProof(t, e, key, set("domain", "evil.example")), target, now, WrongDomain},
		{"wrong uri", handProof(t, e, key, nil), Target{target.Domain, "https://audit.example.com/other/precheck", mainnet}, now, WrongURI},
		{"wrong chain", handProof(t, e, key, nil), Target{target.Domain, target.URI, devnet}, now, WrongChain},
		{"an EVM type", handProof(t, e, key, set("type", "eip191")), target, now, WrongChain},
		{"version 2", handProof(t, e, key, set("version", "2")), target, now, WrongVersion},
		{"issuedAt moved", handProof(t, e, key, set("issuedAt", "2026-11-29T12:04:00.000Z")), target, now, UnknownNonce},
		{"expiry stretched", handProof(t, e, key, set("expirationTime", "2026-11-29T13:00:00.000Z")), target, now, UnknownNonce},
		{"another fleet's nonce", handProof(t, foreign, key, nil), target, now, UnknownNonce},
		{"a nonce made up", handProof(t, e, key, set("nonce", "a1b2c3d4e5f67890a1b2c3d4e5f67890")), target, now, UnknownNonce},
		{"expired", handProof(t, e, key, nil), target, now.Add(TTL), Expired},
		{"issued in the future", handProof(t, ahead, key, nil), target, now, NotYetValid},
		{"a notBefore added", handProof(t, e, key, set("notBefore", "2026-11-29T12:03:00.000Z")), target, now, UnknownNonce},
		{"resources edited", handProof(t, e, key, set("resources", []string{"https://audit.example.com/", "stream-divergence/precheck"})), target, now, UnknownNonce},
		{"signed by another wallet", handProof(t, e, key, set("address", solana.EncodeBase58(wallet(2).Public().(ed25519.PublicKey)))), target, now, BadSignature},
		{"statement edited", handProof(t, e, key, set("statement", "something else")), target, now, UnknownNonce},
		{"no address", handProof(t, e, key, set("address", "not base58 0OIl")), target, now, BadAddress},
		{"no signature", handProof(t, e, key, set("signature", "")), target, now, NotAProof},
		{"not base64", "{not base64}", target, now, NotAProof},
		{"the challenge request", Ask, target, now, NotAProof},
	} {
		_, err := s.Check(c.header, c.t, c.at)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// a fleet's clocks a few seconds apart: accepted
	if _, err := s.Check(handProof(t, slightly, key, nil), target, now); err != nil {
		t.Errorf("issued 10 s ahead of this host's clock: %v", err)
	}
	if _, err := s.Check(handProof(t, e, key, nil), target, now.Add(TTL-time.Millisecond)); err != nil {
		t.Errorf("a millisecond before expiry: %v", err)
	}
}

// Spent nonces are swept as proofs go on: every sweepEvery-th spend
// deletes the records past their keep, and keeps the rest.
func TestSpentNoncesAreSwept(t *testing.T) {
	s, m := newService()
	s.sweepEvery = 4
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	key := wallet(3)
	for i := 0; i < 8; i++ {
		at := now.Add(time.Duration(i) * 2 * time.Minute)
		e, _ := s.Challenge(target, at)
		p, err := s.Check(handProof(t, e, key, nil), target, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Spend(context.Background(), p, at); err != nil {
			t.Fatal(err)
		}
	}
	// the 8th spend at +14 min swept every nonce kept until before then
	// (issued at or before +8 min: kept 5 min 30 s)
	if m.sweeps != 2 || len(m.kept) != 3 {
		t.Fatalf("%d sweeps, %d kept, want 2 and 3", m.sweeps, len(m.kept))
	}
}

// A challenge binds the request's host as a URL writes it (lower case,
// the scheme's default port dropped, another port kept); a Host that is
// no host name gets none; a fleet with a public URL binds that, whatever
// Host a request names (no relaying site gets a proof for itself).
func TestTargets(t *testing.T) {
	s, _ := newService()
	for _, c := range []struct{ scheme, host, domain, uri string }{
		{"https", "Audit.Example.com", "audit.example.com", "https://audit.example.com/p"},
		{"https", "audit.example.com:443", "audit.example.com", "https://audit.example.com/p"},
		{"http", "127.0.0.1:8080", "127.0.0.1:8080", "http://127.0.0.1:8080/p"},
		{"http", "[::1]:80", "[::1]", "http://[::1]/p"},
		{"https", "[::1]:8443", "[::1]:8443", "https://[::1]:8443/p"},
	} {
		got, ok := s.Target(c.scheme, c.host, "/p", mainnet)
		if !ok || got.Domain != c.domain || got.URI != c.uri || got.Chain != mainnet {
			t.Errorf("%s %s: %+v %v", c.scheme, c.host, got, ok)
		}
	}
	for _, bad := range []string{"", "a b", "evil.example/x", "h\nInjected: line", strings.Repeat("a", 256)} {
		if _, ok := s.Target("https", bad, "/p", mainnet); ok {
			t.Errorf("Host %q got a target", bad)
		}
	}
	pinned, err := New([]byte("k"), &memNonces{kept: map[string]time.Time{}}, "https://Assay.Example.com:443/")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := pinned.Target("http", "evil.example", "/s/precheck", mainnet); !ok || got.Domain != "assay.example.com" || got.URI != "https://assay.example.com/s/precheck" {
		t.Errorf("pinned: %+v %v", got, ok)
	}
	based, _ := New([]byte("k"), nil, "https://example.com/assay/")
	if got, _ := based.Target("http", "x", "/s/precheck", mainnet); got.Domain != "example.com" || got.URI != "https://example.com/assay/s/precheck" {
		t.Errorf("a public URL with a base path: %+v", got)
	}
	for _, bad := range []string{"assay.example.com", "ftp://assay.example.com", "https://"} {
		if _, err := New([]byte("k"), nil, bad); err == nil {
			t.Errorf("public URL %q accepted", bad)
		}
	}
}
