package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/preflight"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// dryRun is `assay serve --check`: everything serve would refuse to start
// on, found before a deployment is rolled out, without serving and
// without making anything a first start would make (a store, keys, a fee
// payer, a host id). The config was parsed already (every diagnostic at
// once). It prints one line per check and fails on the first problem
// class it cannot pass, after running every check.
func dryRun(ctx context.Context, cfg config.Config, log hclog.Logger, out io.Writer) error {
	var problems []string
	note := func(what string, err error) {
		if err != nil {
			problems = append(problems, what+": "+err.Error())
			fmt.Fprintf(out, "FAIL %s: %v\n", what, err)
			return
		}
		fmt.Fprintf(out, "ok   %s\n", what)
	}
	note("data dir "+cfg.DataDir, writableDir(cfg.DataDir))
	st, err := store.OpenExisting(ctx, cfg.Store, cfg.DataDir)
	switch {
	case errors.Is(err, store.ErrNoStore):
		fmt.Fprintf(out, "ok   store: none there yet; serve creates it (%v)\n", err)
	case err != nil:
		note("store", errors.New(strings.TrimPrefix(err.Error(), "store: ")))
	default:
		note("store "+st.Where(), nil)
		if err := identityAgrees(ctx, cfg, st); err != nil {
			note("payments: the store's payment identity", err)
		}
		st.Close()
	}
	if cfg.KeysSecretFile != "" {
		note("keys secret file", nonEmptyFile(cfg.KeysSecretFile))
	}
	if cfg.Payments == "local" && cfg.FeePayerKeyFile != "" {
		_, err := wallet.Load(cfg.FeePayerKeyFile)
		note("fee payer key file", err)
	}
	if cfg.FMV != nil {
		_, err := ledger.LoadRates(cfg.FMV.RatesFile, cfg.FMV.Basis)
		note("fmv rates file", err)
	}
	// each plugin as serve starts it: its pin checked against its binary,
	// its handshake and description; then stopped
	strict := cfg
	strict.StrictPlugins = true
	ps, err := startPlugins(ctx, strict, log, "")
	ps.Close()
	switch {
	case err != nil:
		note("plugins", err)
	case len(ps.services) == 0:
		note("plugins", noFamily(ps))
	default:
		note(fmt.Sprintf("plugins: %d families, %d adapters, every pin matched", len(ps.services), len(cfg.Plugins)-len(ps.services)), nil)
	}
	remote := strings.HasPrefix(cfg.Payments, "http://") || strings.HasPrefix(cfg.Payments, "https://")
	if (cfg.SolanaRPC != "" && cfg.Payments == "local") || remote {
		for _, f := range checkPayments(ctx, cfg, remote) {
			switch {
			case f.OK():
				fmt.Fprintf(out, "ok   payments: %s\n", f.What)
			case f.Fatal:
				note("payments: "+f.What, fmt.Errorf("%s (fix: %s)", f.Explained(), f.Fix))
			default:
				fmt.Fprintf(out, "WARN payments: %s: %s (fix: %s)\n", f.What, f.Explained(), f.Fix)
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("serve --check: %d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	fmt.Fprintln(out, "serve --check: ready to serve")
	return nil
}

// identityAgrees is whether the config takes its payments as the store
// settles them: a store stamped with a payment identity (or that settled
// on a chain before stamps) is served by no host in house mode, with
// payments off, or with another network, asset or pay_to (serve answers
// its paid calls 503 payment_identity_mismatch).
func identityAgrees(ctx context.Context, cfg config.Config, st *store.Store) error {
	stamp, ok, err := st.PaymentIdentity(ctx)
	if err != nil {
		return err
	}
	if !ok {
		if settled, err := st.SettledOnChain(ctx); err != nil || !settled {
			return err
		}
	}
	where := "settled on a chain before its identity was stamped"
	if ok {
		where = "settles to pay_to " + stamp.PayTo + " on " + stamp.Network
	}
	if cfg.Payments == "house" || cfg.Payments == "off" {
		return fmt.Errorf("the store %s; payments %s takes no money there: run with the store's payments (local)", where, cfg.Payments)
	}
	asset, payTo, err := seller(cfg, false)
	if err != nil {
		return fmt.Errorf("the store %s; this config names no pay_to and the data dir has no seller wallet: set pay_to", where)
	}
	if mine := (store.PaymentIdentity{Network: cfg.Network, Asset: asset, PayTo: payTo}); ok && !mine.Same(stamp) {
		return fmt.Errorf("the store settles to pay_to %s in %s on %s; this config pays %s in %s on %s", stamp.PayTo, stamp.Asset, stamp.Network, payTo, asset, cfg.Network)
	}
	return nil
}

// checkPayments is the payment preflight serve runs at start, on the
// config's node, pay_to (a generated seller wallet when there is one) and
// the embedded facilitator's fee payer, or the remote facilitator.
func checkPayments(ctx context.Context, cfg config.Config, remote bool) []preflight.Finding {
	asset, payTo, err := seller(cfg, false)
	if err != nil && cfg.SolanaRPC != "" {
		// a seller wallet serve would generate has no token account yet
		return []preflight.Finding{{What: "pay_to", Err: err.Error(), Fix: "set pay_to (--pay-to) to the seller's wallet", Fatal: true}}
	}
	feePayer := ""
	if cfg.Payments == "local" {
		path := cfg.FeePayerKeyFile
		if path == "" {
			path = filepath.Join(cfg.DataDir, "facilitator-fee-payer.json")
		}
		if w, err := wallet.Load(path); err == nil {
			feePayer = solana.EncodeBase58(w.Public().(ed25519.PublicKey))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p := preflight.Params{Network: cfg.Network, PayTo: payTo, Mint: asset, FeePayer: feePayer}
	if cfg.SolanaRPC != "" {
		p.Chain = solanarpc.New(cfg.SolanaRPC)
	}
	if remote {
		p.Facilitator = x402.NewRemoteAt(cfg.Payments)
	}
	return preflight.Run(ctx, p)
}

// writableDir is whether dir exists (or can be made, as serve makes it)
// and takes a file, which serve's host id and lock need.
func writableDir(dir string) error {
	probe := dir
	for {
		if _, err := os.Stat(probe); err == nil {
			break
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return errors.New("no existing folder on its path")
		}
		probe = parent
	}
	f, err := os.CreateTemp(probe, ".assay-check-")
	if err != nil {
		return fmt.Errorf("cannot write there: %w", pathCause(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// nonEmptyFile is whether path can be read and holds something.
func nonEmptyFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read it: %w", pathCause(err))
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return errors.New("it is empty")
	}
	return nil
}
