package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/reconcile"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// ledgerCmd runs the operator's ledger commands against the configured store.
func ledgerCmd(sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ledger "+sub, flag.ContinueOnError)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	asJSON := fs.Bool("json", false, "report: machine-readable JSON")
	basis := fs.String("basis", "", "fill-fmv: the rates' stated basis (default: the config's fmv.basis)")
	payTo := fs.String("pay-to", "", "reconcile: the seller wallet paid (default: the config's pay_to, else the data dir's seller wallet)")
	rpcURL := fs.String("solana-rpc", os.Getenv("SOLANA_RPC_URL"), "reconcile: a Solana JSON-RPC node with transaction history (default: SOLANA_RPC_URL, then the config's solana_rpc)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store, rpcURL: &c.SolanaRPC, payTo: &c.PayTo}
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := openStore(ctx, cfg, *asJSON, stdout, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	switch sub {
	case "report":
		r, err := ledger.Build(ctx, st, now)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}
		_, err = io.WriteString(stdout, r.Text())
		return err
	case "fill-fmv":
		if fs.NArg() != 1 {
			return errors.New("ledger fill-fmv: name the rates file")
		}
		if *basis == "" && cfg.FMV != nil {
			*basis = cfg.FMV.Basis
		}
		if *basis == "" {
			return errors.New("ledger fill-fmv: state the rates' basis (--basis or the config's fmv block)")
		}
		rates, err := ledger.LoadRates(fs.Arg(0), *basis)
		if err != nil {
			return err
		}
		n, err := ledger.FillFMV(ctx, st, rates, now)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%d amendment rows written\n", n)
		return err
	case "reconcile":
		return reconcileCmd(ctx, cfg, st, *asJSON, stdout)
	case "refund":
		if fs.NArg() != 1 {
			return errors.New("ledger refund: name the transaction id")
		}
		id, err := ledger.Refund(ctx, st, fs.Arg(0), now)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "refund amendment %d written\n", id)
		return err
	}
	return fmt.Errorf("ledger: unknown command %q\n%s", sub, usage)
}

// reconcileCmd is `assay ledger reconcile`: the ledger against the chain.
// It fails (a non-zero exit) when any line or transfer disagrees.
func reconcileCmd(ctx context.Context, cfg config.Config, st *store.Store, asJSON bool, stdout io.Writer) error {
	if cfg.SolanaRPC == "" {
		return errors.New("ledger reconcile: name a Solana RPC node (--solana-rpc, SOLANA_RPC_URL or the config's solana_rpc)")
	}
	asset, payTo, err := seller(cfg, false)
	if err != nil {
		return fmt.Errorf("ledger reconcile: %w", err)
	}
	owner, err := solana.ParsePublicKey(payTo)
	if err != nil {
		return fmt.Errorf("ledger reconcile: pay_to: %w", err)
	}
	mint, err := solana.ParsePublicKey(asset)
	if err != nil {
		return fmt.Errorf("ledger reconcile: asset: %w", err)
	}
	ata, err := solana.FindAssociatedTokenAddress(owner, mint, solana.TokenProgram())
	if err != nil {
		return fmt.Errorf("ledger reconcile: %w", err)
	}
	lines, err := st.Lines(ctx)
	if err != nil {
		return err
	}
	r, err := reconcile.Run(ctx, solanarpc.New(cfg.SolanaRPC), lines,
		reconcile.Books{PayTo: payTo, Asset: asset, TokenAccount: ata.String(), MemoPrefix: x402.MemoPrefix})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		_, err = io.WriteString(stdout, r.Text())
	}
	if err != nil {
		return err
	}
	if !r.Clean() {
		return fmt.Errorf("ledger reconcile: %d lines not matching the chain, %d transfers without a line", len(r.Lines), len(r.Unrecorded))
	}
	return nil
}
