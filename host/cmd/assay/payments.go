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
// preflight, run once here (a fatal finding refuses the start) and again
// by readiness (nil: nothing to check, no node and no remote facilitator).
func paymentGate(ctx context.Context, cfg config.Config, st *store.Store, id string, met *metrics.Metrics, log hclog.Logger) (gate payment.Gate, checks func(context.Context) []preflight.Finding, err error) {
	if cfg.Payments == "off" {
		return payment.Off{}, nil, nil
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
	var fac x402.Facilitator
	var lookup *x402.ChainLookup
	switch {
	case cfg.Payments == "local", cfg.Payments == "house":
		feePayer := cfg.FeePayerKeyFile
		if feePayer == "" {
			feePayer = filepath.Join(cfg.DataDir, "facilitator-fee-payer.json")
		}
		key, err := wallet.LoadOrNew(feePayer)
		if err != nil {
			return nil, nil, err
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
		fac = local
	case strings.HasPrefix(cfg.Payments, "http://") || strings.HasPrefix(cfg.Payments, "https://"):
		remote, err := x402.NewRemote(ctx, cfg.Payments, cfg.Network, cfg.FeePayer)
		if err != nil {
			return nil, nil, err
		}
		fac, params.Facilitator = remote, remote
		if rpc != nil {
			// beside a remote facilitator the node finds a claim a crash
			// left settling by its memo, and gives 402s a live blockhash
			if lookup, err = x402.NewChainLookup(rpc, payTo, asset); err != nil {
				return nil, nil, err
			}
			log.Info("payment claims are looked up on the chain", "solana_rpc_host", urlHost(cfg.SolanaRPC))
		}
	default:
		return nil, nil, fmt.Errorf("payments %q: expected off, house, local or a facilitator URL", cfg.Payments)
	}
	log.Info("payments", "mode", cfg.Payments, "network", cfg.Network, "pay_to", payTo, "fee_payer", fac.FeePayer())
	if cfg.Payments == "local" {
		params.FeePayer = fac.FeePayer()
	}
	if params.Chain != nil || params.Facilitator != nil {
		checks = func(ctx context.Context) []preflight.Finding { return preflight.Run(ctx, params) }
		if err := paymentPreflight(ctx, log, checks); err != nil {
			return nil, nil, err
		}
	}
	sealer, err := redeliverySealer(cfg)
	if err != nil {
		return nil, nil, err
	}
	gc := x402.Config{Facilitator: fac, Store: st, Network: cfg.Network, Asset: asset, PayTo: payTo, PublicURL: cfg.PublicURL, HostID: id, Sealer: sealer}
	if lookup != nil {
		gc.Chain = lookup
	}
	g, err := x402.NewGate(ctx, gc)
	if err != nil {
		return nil, nil, err
	}
	return g, checks, nil
}

// paymentPreflight checks the payment path before the host takes a
// payment: a finding that would fail every payer (no node, another
// network, no token account for pay_to) refuses the start, naming the
// fix; a fee payer short of SOL only warns (preflight.feePayer says why).
func paymentPreflight(ctx context.Context, log hclog.Logger, checks func(context.Context) []preflight.Finding) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var fatal []string
	for _, f := range checks(ctx) {
		switch {
		case f.OK():
			log.Info("payment preflight: ok", "check", f.What)
		case f.Fatal:
			fatal = append(fatal, f.What+": "+f.Explained()+" (fix: "+f.Fix+")")
		default:
			log.Warn("payment preflight: "+f.What+": "+f.Explained(), "fix", f.Fix)
		}
	}
	if len(fatal) > 0 {
		return fmt.Errorf("payment preflight: this host cannot take a payment:\n  %s", strings.Join(fatal, "\n  "))
	}
	return nil
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
