package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/reconcile"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// ledgerFlags names the subcommands each of ledgerCmd's own flags is for:
// one given to another is refused, not ignored (`report --from` would
// otherwise print every day while the operator reads a month).
var ledgerFlags = map[string][]string{
	"json": {"report", "reconcile"}, "basis": {"fill-fmv"}, "rebasis": {"fill-fmv"},
	"pay-to": {"reconcile"}, "solana-rpc": {"reconcile"}, "reason": {"refund"}, "force": {"refund"},
	"from": {"export"}, "to": {"export"}, "format": {"export"},
}

// ledgerCmd runs the operator's ledger commands against the configured store.
func ledgerCmd(sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ledger " + sub)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	asJSON := fs.Bool("json", false, "report: machine-readable JSON")
	basis := fs.String("basis", "", "fill-fmv: the rates' stated basis (default: the config's fmv.basis)")
	rebasis := fs.Bool("rebasis", false, "fill-fmv: re-rate under --basis the lines rated under another basis (without it such lines refuse the run)")
	reason := fs.String("reason", "", "refund: why, kept beside the refund (1 to 300 printable characters; nothing a payer submitted)")
	force := fs.Bool("force", false, "refund: record a refund of a house line (the operator's own proof) too")
	from := fs.String("from", "", "export: the first UTC day, YYYY-MM-DD (inclusive)")
	to := fs.String("to", "", "export: the last UTC day, YYYY-MM-DD (inclusive)")
	format := fs.String("format", "csv", "export: csv or json")
	payTo := fs.String("pay-to", "", "reconcile: the seller wallet paid (default: the config's pay_to, else the data dir's seller wallet)")
	rpcURL := fs.String("solana-rpc", os.Getenv("SOLANA_RPC_URL"), "reconcile: a Solana JSON-RPC node with transaction history (default: SOLANA_RPC_URL, then the config's solana_rpc)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	var misplaced error
	fs.Visit(func(f *flag.Flag) {
		if subs := ledgerFlags[f.Name]; subs != nil && !slices.Contains(subs, sub) && misplaced == nil {
			misplaced = fmt.Errorf("ledger %s: --%s is a flag of ledger %s only", sub, f.Name, strings.Join(subs, ", "))
		}
	})
	if misplaced != nil {
		return misplaced
	}
	var export exportOptions
	if sub == "export" {
		if export, err = parseExportOptions(*from, *to, *format, pos); err != nil {
			return err
		}
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store, rpcURL: &c.SolanaRPC, payTo: &c.PayTo}
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	// an export's standard output is its CSV or JSON alone
	st, err := openStore(ctx, cfg, *asJSON || sub == "export", stdout, stderr)
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
		if len(pos) != 1 {
			return errors.New("ledger fill-fmv: name the rates file")
		}
		if *basis == "" && cfg.FMV != nil {
			*basis = cfg.FMV.Basis
		}
		if *basis == "" {
			return errors.New("ledger fill-fmv: state the rates' basis (--basis or the config's fmv block)")
		}
		rates, err := ledger.LoadRates(pos[0], *basis)
		if err != nil {
			return err
		}
		return fillFMV(ctx, st, rates, *rebasis, now, stdout)
	case "reconcile":
		return reconcileCmd(ctx, cfg, st, *asJSON, stdout)
	case "refund":
		if len(pos) != 1 {
			return errors.New("ledger refund: name the transaction id")
		}
		return refund(ctx, st, ledger.RefundRequest{TxID: pos[0], Reason: *reason, Force: *force}, now, stdout)
	case "export":
		return exportCmd(ctx, st, export, stdout)
	}
	return fmt.Errorf("ledger: unknown command %q\n%s", sub, usage)
}

// parseInterspersed parses flags wherever they stand among the arguments
// (`refund TX --reason …` as well as `refund --reason … TX`) and returns
// the arguments; after "--" every one is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// fillFMV is `assay ledger fill-fmv`. It fails (a non-zero exit) while any
// line still waits for a rate, or keeps another basis after --rebasis:
// the books are not closed yet.
func fillFMV(ctx context.Context, st *store.Store, rates *ledger.Rates, rebasis bool, now time.Time, stdout io.Writer) error {
	f, err := ledger.FillFMV(ctx, st, rates, now, ledger.FillOptions{Rebasis: rebasis})
	var conflict *ledger.BasisConflictError
	if errors.As(err, &conflict) {
		keep := ""
		if len(conflict.Have) == 1 {
			keep = fmt.Sprintf(", or --basis %q with rates of that basis", conflict.Have[0])
		}
		return fmt.Errorf("ledger fill-fmv: %w: nothing written; give --rebasis to re-rate them under %q%s", err, conflict.Want, keep)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d amendment rows written", f.Written)
	if f.Rebased > 0 {
		fmt.Fprintf(stdout, " (%d of them re-rate a line from another basis to %q)", f.Rebased, rates.Basis)
	}
	fmt.Fprintln(stdout)
	for _, u := range f.Waiting {
		fmt.Fprintf(stdout, "  line %d (day %s) waits for a rate\n", u.LineID, u.Day)
	}
	for _, u := range f.OtherBasis {
		fmt.Fprintf(stdout, "  line %d (day %s) keeps basis %q: no rate for its day in this file\n", u.LineID, u.Day, u.Basis)
	}
	var left []string
	if len(f.Waiting) > 0 {
		left = append(left, fmt.Sprintf("%d lines still wait for a rate on days %s", len(f.Waiting), days(f.Waiting)))
	}
	if len(f.OtherBasis) > 0 {
		left = append(left, fmt.Sprintf("%d lines keep another basis on days %s", len(f.OtherBasis), days(f.OtherBasis)))
	}
	if len(left) > 0 {
		return fmt.Errorf("ledger fill-fmv: %s: add their days to the rates file and run it again", strings.Join(left, "; "))
	}
	_, err = fmt.Fprintf(stdout, "every line has a CAD rate under basis %q\n", rates.Basis)
	return err
}

// days are the distinct days of lines, in order, the first ten named.
func days(us []ledger.Unrated) string {
	var ds []string
	for _, u := range us {
		if !slices.Contains(ds, u.Day) {
			ds = append(ds, u.Day)
		}
	}
	slices.Sort(ds)
	if len(ds) > 10 {
		return strings.Join(ds[:10], ", ") + fmt.Sprintf(" and %d more", len(ds)-10)
	}
	return strings.Join(ds, ", ")
}

// refund is `assay ledger refund`: it says what it recorded and that the
// money is still the operator's to send back.
func refund(ctx context.Context, st *store.Store, req ledger.RefundRequest, now time.Time, stdout io.Writer) error {
	r, err := ledger.Refund(ctx, st, req, now)
	switch {
	case errors.Is(err, ledger.ErrHouseLine):
		return fmt.Errorf("ledger refund: line %d: %w; give --force to record a refund of it anyway", r.Line.ID, err)
	case errors.Is(err, servicestate.ErrReason):
		return fmt.Errorf("ledger refund: --reason: %w", err)
	case err != nil && r.Line.ID != 0:
		return fmt.Errorf("ledger refund: line %d: %w", r.Line.ID, err)
	case err != nil:
		return fmt.Errorf("ledger refund: %w", err)
	}
	l := r.Line
	payer := "unknown (the line names none)"
	if l.Payer != nil {
		payer = *l.Payer
	}
	why := "none given"
	if req.Reason != "" {
		why = req.Reason
	}
	house := ""
	if l.House {
		house = " (a house line: the operator's own proof)"
	}
	_, err = fmt.Fprintf(stdout, `refund amendment %d written for line %d%s: service %s, day %s, transaction %s
  payer:  %s
  amount: %d USDC units (%s USDC)
  reason: %s
This records the refund in the ledger; it moves no money. Send %s USDC back to the payer on chain yourself.
`, r.AmendmentID, l.ID, house, l.Service, l.Day, req.TxID, payer, r.Units, ledger.USDC(r.Units), why, ledger.USDC(r.Units))
	return err
}

// reconcileCmd is `assay ledger reconcile`: the ledger against the chain.
// It fails (a non-zero exit) when any line or transfer disagrees.
func reconcileCmd(ctx context.Context, cfg config.Config, st *store.Store, asJSON bool, stdout io.Writer) error {
	if cfg.SolanaRPC == "" {
		return errors.New("ledger reconcile: name a Solana RPC node (--solana-rpc, SOLANA_RPC_URL or the config's solana_rpc)")
	}
	asset, payTo, err := seller(cfg, false)
	if errors.Is(err, os.ErrNotExist) {
		// no pay_to and no generated seller wallet here: name the flag
		return errors.New("ledger reconcile: name the seller wallet the payments went to (--pay-to WALLET or the config's pay_to); this data dir holds no generated seller-wallet.json")
	}
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
	since, err := settlesSince(ctx, st, lines)
	if err != nil {
		return err
	}
	r, err := reconcile.Run(ctx, solanarpc.New(cfg.SolanaRPC), lines,
		reconcile.Books{PayTo: payTo, Asset: asset, TokenAccount: ata.String(), MemoPrefix: x402.MemoPrefix, SettlesSince: since})
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

// settlesSince is when the store began to settle on a chain: its payment
// identity's stamp, or its first line paid outside (a store that settled
// under a build from before stamps), whichever came first; zero when it
// never did.
func settlesSince(ctx context.Context, st *store.Store, lines []store.Line) (time.Time, error) {
	var since time.Time
	stamp, ok, err := st.PaymentIdentity(ctx)
	if err != nil {
		return since, err
	}
	if ok {
		since = stamp.StampedAt
	}
	for _, l := range lines {
		if !l.House && l.TxID != nil && (since.IsZero() || l.At.Before(since)) {
			since = l.At
		}
	}
	return since, nil
}
