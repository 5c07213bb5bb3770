package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

func walletNew(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("wallet new", flag.ContinueOnError)
	out := fs.String("out", "wallet.json", "keypair file to write (Solana CLI format, mode 0600)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	priv, err := wallet.New(*out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: address %s (a test wallet: fund it before using it on a real network)\n",
		*out, solana.EncodeBase58(priv.Public().(ed25519.PublicKey)))
	return err
}

// call performs one paid call, saves what it paid for, then checks it
// against the host's published keys.
func call(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	walletPath := fs.String("wallet", "", "payer keypair file (assay wallet new)")
	out := fs.String("out", "report.json", "where to save the signed answer")
	keysURL := fs.String("keys", "", "JWKS to check the answer against (default: the host's /keys)")
	marker := fs.String("marker", "", "redeem this delivery marker (a 503 gave it) instead of paying")
	paymentFile := fs.String("payment", "", "send again the payment saved in this file (an earlier call that got no answer wrote it)")
	rpcURL := fs.String("solana-rpc", os.Getenv("SOLANA_RPC_URL"), "a Solana JSON-RPC node: a blockhash when the 402 has none, and the wallet's balance checked before signing (default: SOLANA_RPC_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 || *walletPath == "" && *marker == "" && *paymentFile == "" {
		return errors.New("call: --wallet FILE | --marker TOKEN | --payment FILE <url> <body.json|->")
	}
	var priv ed25519.PrivateKey
	var err error
	if *walletPath != "" {
		if priv, err = wallet.Load(*walletPath); err != nil {
			return err
		}
	}
	var body []byte
	if fs.Arg(1) == "-" {
		body, err = io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	} else {
		body, err = os.ReadFile(fs.Arg(1))
	}
	if err != nil {
		return fmt.Errorf("call: read body: %w", err)
	}
	target, err := url.Parse(fs.Arg(0))
	if err != nil || target.Host == "" {
		return errors.New("call: the URL must be absolute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	payer := &x402.Payer{Wallet: priv}
	if *rpcURL != "" {
		payer.Chain = solanarpc.New(*rpcURL)
	}
	var res *x402.Paid
	switch {
	case *marker != "":
		res, err = payer.Redeem(ctx, target.String(), body, *marker)
	case *paymentFile != "":
		saved, rerr := os.ReadFile(*paymentFile)
		if rerr != nil {
			return fmt.Errorf("call: read payment: %w", rerr)
		}
		res, err = payer.Resend(ctx, target.String(), body, strings.TrimSpace(string(saved)))
	default:
		res, err = payer.Call(ctx, target.String(), body)
	}
	if err != nil || res.Status == http.StatusServiceUnavailable {
		return unanswered(res, err, *out)
	}
	if res.Status != http.StatusOK {
		var a struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(res.Body, &a)
		return fmt.Errorf("call: %d %s: %s", res.Status, a.Error.Code, a.Error.Message)
	}
	// what was paid for is saved before anything else can fail
	if err := os.WriteFile(*out, res.Body, 0o600); err != nil {
		return fmt.Errorf("call: save the answer (%d bytes) to %s: %w", len(res.Body), *out, err)
	}
	tx := ""
	if res.Settlement != nil {
		tx = res.Settlement.Transaction
		fmt.Fprintf(stdout, "paid: transaction %s on %s by %s\n", tx, res.Settlement.Network, res.Settlement.Payer)
	}
	if *keysURL == "" {
		*keysURL = target.Scheme + "://" + target.Host + "/keys"
	}
	kid := ""
	jwks, err := readKeys(*keysURL)
	if err == nil {
		kid, err = signing.Verify(res.Body, jwks)
	}
	if err != nil {
		return fmt.Errorf("call: saved %s (transaction %q), but its signature is not checked: %w; check it later with: assay verify --keys URL %s", *out, tx, err, *out)
	}
	_, err = fmt.Fprintf(stdout, "saved %s (signature checked: key %s)\n", *out, kid)
	return err
}

// unanswered explains a paid call that ended without a report: the marker
// a 503 gave, or the payment itself (saved beside --out), redeems it later.
func unanswered(res *x402.Paid, err error, out string) error {
	why := "no answer"
	if err != nil {
		why = err.Error()
	}
	if res != nil && res.Status != 0 {
		var a struct {
			Error   struct{ Code, Message string } `json:"error"`
			Payment struct {
				Marker struct {
					ExpiresAt string `json:"expires_at"`
				} `json:"delivery_marker"`
			} `json:"payment"`
		}
		_ = json.Unmarshal(res.Body, &a)
		why = fmt.Sprintf("%d %s: %s", res.Status, a.Error.Code, a.Error.Message)
		if res.Marker != "" {
			until := ""
			if a.Payment.Marker.ExpiresAt != "" {
				until = ", until " + a.Payment.Marker.ExpiresAt
			}
			return fmt.Errorf("call: %s; redeem later with: assay call --marker %s (same URL and body%s)", why, res.Marker, until)
		}
	}
	if res == nil || res.Payment == "" {
		return fmt.Errorf("call: %s", why)
	}
	// the host may have taken the payment and died before answering: sent
	// again, on this host or another on its store, it delivers the report
	// once and is never charged twice
	path := out + ".payment"
	if werr := os.WriteFile(path, []byte(res.Payment+"\n"), 0o600); werr != nil {
		return fmt.Errorf("call: %s; the payment could not be saved: %w", why, werr)
	}
	return fmt.Errorf("call: %s; the payment may have been taken: send it again with: assay call --payment %s (same URL and body)", why, path)
}
