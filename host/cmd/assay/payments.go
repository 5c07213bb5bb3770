package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/preflight"
	"github.com/assay-audit/assay/host/redelivery"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
	"github.com/hashicorp/go-hclog"
)

// paymentGate builds the configured payments: off; house, the embedded
// facilitator with no chain (it checks and co-signs, nothing moves: the
// operator names it, the start logs it, every 402 and report says it);
// local, the embedded facilitator settling on the chain its solana_rpc
// node serves (fee payer and, without pay_to, a seller wallet generated
// into the data dir); or a remote facilitator URL. checks is the payment
// preflight, run once here and again by readiness (nil: nothing to check,
// no node and no remote facilitator). A definite misconfiguration refuses
// the start; a node or facilitator that does not answer does not: the
// host starts with its paid routes held (503 payment_unavailable, nothing
// taken) until the path answers (payGuard).
func paymentGate(ctx context.Context, cfg config.Config, st *store.Store, id string, met *metrics.Metrics, log hclog.Logger) (gate payment.Gate, checks func(context.Context) []preflight.Finding, err error) {
	if cfg.Payments == "off" {
		return offGate(ctx, st, log)
	}
	asset, payTo, err := seller(cfg, true)
	if err != nil {
		return nil, nil, err
	}
	params := preflight.Params{Network: cfg.Network, PayTo: payTo, Mint: asset}
	var rpc *solanarpc.Client
	if cfg.SolanaRPC != "" {
		rpc = solanarpc.New(cfg.SolanaRPC)
		rpc.OnError = met.RPCError
		params.Chain = rpc
	}
	fac, lookup, remote, err := facilitatorFor(ctx, cfg, rpc, payTo, asset, met, log)
	if err != nil {
		return nil, nil, err
	}
	if remote != nil {
		params.Facilitator = remote
	}
	log.Info("payments", "mode", cfg.Payments, "network", cfg.Network, "pay_to", payTo, "fee_payer", fac.FeePayer())
	if cfg.Payments == "local" {
		params.FeePayer = fac.FeePayer()
	}
	var run func(context.Context) []preflight.Finding
	proven := true
	if params.Chain != nil || params.Facilitator != nil {
		run = preflightChecks(params, remote)
		findings, err := paymentPreflight(ctx, log, run)
		if err != nil {
			return nil, nil, err
		}
		proven = answered(findings)
	}
	sealer, err := redeliverySealer(cfg)
	if err != nil {
		return nil, nil, err
	}
	guard := &payGuard{ctx: ctx, run: run, log: log}
	gc := x402.Config{Facilitator: fac, Store: st, Network: cfg.Network, Asset: asset, PayTo: payTo, PublicURL: cfg.PublicURL, HostID: id, Sealer: sealer,
		DeferResolve: !proven, OnHeld: guard.kick, OnIdentityMismatch: func(stamped store.PaymentIdentity) {
			logMismatch(log, stamped, paymentsMode(cfg.Payments), store.PaymentIdentity{Network: cfg.Network, Asset: asset, PayTo: payTo})
		}}
	if lookup != nil {
		gc.Chain = lookup
	}
	g, err := x402.NewGate(ctx, gc)
	if err != nil {
		return nil, nil, err
	}
	if run == nil {
		return g, nil, nil
	}
	guard.start(g, proven)
	return g, guard.checks, nil
}

// facilitatorFor is the configured facilitator: the embedded one (house,
// or local on rpc's chain), or a remote one (remote set; lookup, the
// chain beside it when rpc is set). A remote facilitator that does not
// answer at start is no error: its fee payer is asked again later.
func facilitatorFor(ctx context.Context, cfg config.Config, rpc *solanarpc.Client, payTo, asset string, met *metrics.Metrics, log hclog.Logger) (fac x402.Facilitator, lookup *x402.ChainLookup, remote *x402.Remote, err error) {
	switch {
	case cfg.Payments == "local", cfg.Payments == "house":
		feePayer := cfg.FeePayerKeyFile
		if feePayer == "" {
			feePayer = filepath.Join(cfg.DataDir, "facilitator-fee-payer.json")
		}
		key, err := wallet.LoadOrNew(feePayer)
		if err != nil {
			return nil, nil, nil, err
		}
		local := x402.NewLocal(key, cfg.Network)
		if cfg.Payments == "house" {
			log.Warn("payments: house mode: the host's own facilitator checks and co-signs every payment and nothing moves on a chain; "+
				"this host takes no money (every 402 and report says so; --payments local with --solana-rpc settles for real)",
				"network", cfg.Network)
		} else {
			local.WithChain(rpc, x402.ChainOptions{})
			met.FeePayerBalance(func() (uint64, bool) { return local.FeePayerLamports(ctx) })
			// the node's host only: an RPC URL often carries an API key
			log.Info("payments settle on the chain", "solana_rpc_host", urlHost(cfg.SolanaRPC))
		}
		return local, nil, nil, nil
	case strings.HasPrefix(cfg.Payments, "http://") || strings.HasPrefix(cfg.Payments, "https://"):
		remote, err := x402.NewRemote(ctx, cfg.Payments, cfg.Network, cfg.FeePayer)
		if errors.Is(err, x402.ErrFacilitator) {
			// no answer: the preflight says so, and asks again (payGuard)
			remote, err = x402.NewRemoteAt(cfg.Payments), nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if rpc != nil {
			// beside a remote facilitator the node finds a claim a crash
			// left settling by its memo, and gives 402s a live blockhash
			if lookup, err = x402.NewChainLookup(rpc, payTo, asset); err != nil {
				return nil, nil, nil, err
			}
			log.Info("payment claims are looked up on the chain", "solana_rpc_host", urlHost(cfg.SolanaRPC))
		}
		return remote, lookup, remote, nil
	}
	return nil, nil, nil, fmt.Errorf("payments %q: expected off, house, local or a facilitator URL", cfg.Payments)
}

// paymentPreflight checks the payment path before the host takes a
// payment: a definite finding that would fail every payer or pay the
// wrong place (another network, no token account for pay_to, a
// facilitator without the network) refuses the start, naming the fix; a
// node or facilitator that does not answer, and a fee payer short of
// SOL, only warn (preflight.Finding.Unreachable, preflight.feePayer).
func paymentPreflight(ctx context.Context, log hclog.Logger, checks func(context.Context) []preflight.Finding) ([]preflight.Finding, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var fatal []string
	findings := checks(ctx)
	for _, f := range findings {
		switch {
		case f.OK():
			log.Info("payment preflight: ok", "check", f.What)
		case f.Misconfigured():
			fatal = append(fatal, f.What+": "+f.Explained()+" (fix: "+f.Fix+")")
		default:
			log.Warn("payment preflight: "+f.What+": "+f.Explained(), "fix", f.Fix)
		}
	}
	if len(fatal) > 0 {
		return nil, fmt.Errorf("payment preflight: this host cannot take a payment:\n  %s", strings.Join(fatal, "\n  "))
	}
	return findings, nil
}

// redeliverySealer keeps issued answers under the operator's key secret
// when there is one (every host of a fleet then opens what another
// issued), else under the data dir's own redelivery secret.
func redeliverySealer(cfg config.Config) (*redelivery.Sealer, error) {
	if cfg.KeysSecretFile == "" {
		return redelivery.Open(cfg.DataDir)
	}
	secret, err := os.ReadFile(cfg.KeysSecretFile)
	if err != nil {
		return nil, fmt.Errorf("keys_secret_file: %w", err)
	}
	s, err := redelivery.New(bytes.TrimSpace(secret))
	if err != nil {
		return nil, fmt.Errorf("keys_secret_file: %w", err)
	}
	return s, nil
}

// seller is the network's USDC and the wallet paid: pay_to, or the seller
// wallet in the data dir (made when create, on a host's first start).
func seller(cfg config.Config, create bool) (asset, payTo string, err error) {
	asset = map[string]string{x402.SolanaMainnet: x402.USDCMainnet, x402.SolanaDevnet: x402.USDCDevnet, x402.SolanaTestnet: x402.USDCDevnet}[cfg.Network]
	if asset == "" {
		return "", "", fmt.Errorf("network %q: expected a Solana CAIP-2 id (mainnet, devnet or testnet)", cfg.Network)
	}
	if cfg.PayTo != "" {
		return asset, cfg.PayTo, nil
	}
	load := wallet.Load
	if create {
		load = wallet.LoadOrNew
	}
	w, err := load(filepath.Join(cfg.DataDir, "seller-wallet.json"))
	if err != nil {
		return "", "", err
	}
	return asset, solana.EncodeBase58(w.Public().(ed25519.PublicKey)), nil
}

// hostID names this host across its restarts: a random id kept in the data
// dir. A host that starts releases the payment claims its earlier run held
// (they are redeemable at once), so two running hosts must not share one
// data dir (serve holds it with dirlock first).
func hostID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "host-id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); len(id) == 16 && strings.Trim(id, "0123456789abcdef") == "" {
			return id, nil
		}
		return "", fmt.Errorf("%s: expected 16 hex digits", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("host id: %w", err)
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("host id: %w", err)
	}
	id := hex.EncodeToString(b)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("host id: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("host id: %w", err)
	}
	return id, nil
}
