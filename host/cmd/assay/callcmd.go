package main

import (
	"bytes"
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
	"strconv"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/siwx"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

func walletNew(args []string, stdout io.Writer) error {
	fs := newFlags("wallet new")
	out := fs.String("out", "wallet.json", "keypair file to write (Solana CLI format, mode 0600)")
	if err := parse(fs, args); err != nil {
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

// Exit statuses of `assay call`: a script calling it needs to know whether
// it holds a report and whether it paid without one, so that retrying on
// failure never pays twice.
const (
	callVerified   = 0 // the report is saved and its signature checked
	callFailed     = 1 // anything else
	callUsage      = 2 // the command line; or a new payment while one is owed
	callUnverified = 3 // the report is saved, its signature not checked
	callNotPaid    = 4 // nothing was charged
	callOwed       = 5 // paid or possibly paid, no report yet: re-send it
)

// callUsageText is `assay call -h`: the exit statuses are the command's
// contract with a script that runs it.
const callUsageText = `usage:
  assay call --wallet FILE | --payment FILE | --marker TOKEN [--out FILE] [--keys JWKS-URL] [--solana-rpc URL] <url> <body.json|->

Pays for one report: POST, read the 402, sign the USDC transfer it asks for,
send the request again with it, save the signed answer in --out, check its
signature against the host's keys. Every payment carries an x402
payment-identifier id, and a payment sent again is never charged twice: the
host answers it with the report it bought.

exit status:
  0  the report is saved in --out and its signature checked
  3  the report is saved in --out, its signature not checked (the keys
     unreachable, or it did not verify against them): run assay verify
  4  not paid: nothing was charged (the host refused the body or the
     payment, payment_conflict, the wallet short, the host unreachable
     before any payment was sent)
  5  paid or possibly paid, no report yet: the payment is saved in
     <out>.payment (or the delivery marker printed); send it again, same URL
     and body, with --payment <out>.payment (or --marker TOKEN): it is never
     charged twice
  2  usage; or --wallet while <out>.payment holds the payment of a call that
     ended with 5 (send that one with --payment, or remove the file)
  1  anything else (a wallet, body or payment file unreadable)
A script that retries: 0 and 3 hold the report; after 5 retry with
--payment <out>.payment, never with a new payment.

A pre-check URL (…/precheck) is free and never paid: with --wallet the call
proves the wallet (x402 sign-in-with-x: a challenge the host gives without
counting anything, signed, sent in SIGN-IN-WITH-X), so the pre-check counts
against the wallet's free allowance, not this machine's address; the
signed answer is saved in --out. Exit 0 or 3 as above, 4 for any answer but
200 (nothing is ever charged).

flags:
`

// payerNode is the payer's node from --solana-rpc: a URL (its own node),
// "none" (no node at all, not even the network's public one: a 402
// without a blockhash is then refused before anything is signed), or ""
// (the network's public node, only for a 402 without a blockhash).
func payerNode(flag string) (*solanarpc.Client, map[string]string) {
	switch flag {
	case "":
		return nil, nil
	case "none":
		return nil, map[string]string{}
	}
	return solanarpc.New(flag), nil
}

// callError ends `assay call` with the exit status that says whether it
// paid and whether it holds the report.
type callError struct {
	status int
	err    error
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// callExit wraps err with status.
func callExit(status int, err error) error { return &callError{status: status, err: err} }

// exitStatus is the process exit status for a command's error: 0 for none
// (or a request for the flags), a call's own status, else 1.
func exitStatus(err error) int {
	var ce *callError
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ce):
		return ce.status
	case errors.As(err, &ue):
		return exitUsage
	}
	return callFailed
}

// call performs one paid call, saves what it paid for, then checks it
// against the host's published keys; its error's exitStatus tells apart
// the outcomes callUsageText lists.
func call(args []string, stdout io.Writer) error {
	fs := newFlags("call")
	walletPath := fs.String("wallet", "", "payer keypair file (assay wallet new)")
	out := fs.String("out", "report.json", "where to save the signed answer (and <out>.payment, a payment that got no answer)")
	keysURL := fs.String("keys", "", "JWKS to check the answer against (default: the host's /keys)")
	marker := fs.String("marker", "", "redeem this delivery marker (a 503 gave it) instead of paying")
	paymentFile := fs.String("payment", "", "send again the payment saved in this file (an earlier call that got no answer wrote it)")
	rpcURL := fs.String("solana-rpc", os.Getenv("SOLANA_RPC_URL"), "a Solana JSON-RPC node: a blockhash when the 402 has none, and the wallet's balance checked before signing (default: SOLANA_RPC_URL, else the network's public node when a 402 has no blockhash; none: no node at all)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), callUsageText)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return callExit(callUsage, err)
	}
	if fs.NArg() != 2 || *walletPath == "" && *marker == "" && *paymentFile == "" {
		return callExit(callUsage, errors.New("call: --wallet FILE | --marker TOKEN | --payment FILE <url> <body.json|-> (assay call -h)"))
	}
	target, err := url.Parse(fs.Arg(0))
	if err != nil || target.Host == "" {
		return callExit(callUsage, errors.New("call: the URL must be absolute"))
	}
	fresh := *marker == "" && *paymentFile == ""
	if fresh && strings.HasSuffix(target.Path, "/precheck") {
		return precheckCall(target, fs.Arg(1), *walletPath, *out, *keysURL, stdout)
	}
	owed := *out + ".payment"
	if _, err := os.Lstat(owed); err == nil && fresh {
		// a wrapper re-running a call that ended with 5 would otherwise pay
		// a second time for the report the saved payment already bought
		return callExit(callUsage, fmt.Errorf("call: %s holds a payment an earlier call sent and got no answer for: send it with: assay call --payment %s (same URL and body; never charged twice); once its report is saved, remove the file to pay anew", owed, owed))
	}
	var priv ed25519.PrivateKey
	if *walletPath != "" {
		if priv, err = wallet.Load(*walletPath); err != nil {
			return err
		}
	}
	body, err := readCallBody(fs.Arg(1))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	payer := &x402.Payer{Wallet: priv}
	payer.Chain, payer.Nodes = payerNode(*rpcURL)
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
	// a request that carried a payment or a marker may have been charged:
	// only an answer the host gave to it says it was not
	sentPayment := *marker != "" || res != nil && res.Payment != ""
	if err != nil || res.Status == http.StatusServiceUnavailable || sentPayment && res.Status >= 500 {
		return unanswered(res, err, *out, *marker)
	}
	if res.Status != http.StatusOK {
		var a struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(res.Body, &a)
		return callExit(callNotPaid, fmt.Errorf("call: %d %s: %s; this call charged nothing", res.Status, a.Error.Code, a.Error.Message))
	}
	// what was paid for is saved before anything else can fail
	if err := os.WriteFile(*out, res.Body, 0o600); err != nil {
		err = fmt.Errorf("call: save the answer (%d bytes) to %s: %w", len(res.Body), *out, err)
		if res.Payment == "" {
			return err
		}
		// the report is lost with the write; a re-send of its payment is
		// answered with it again
		return owe(res, err.Error(), *out, "")
	}
	tx := ""
	if res.Settlement != nil {
		tx = res.Settlement.Transaction
		id := ""
		if res.Identifier != "" {
			id = " (payment id " + res.Identifier + ")"
		}
		house := ""
		var a struct {
			Payment struct {
				House string `json:"house"`
			} `json:"payment"`
		}
		if json.Unmarshal(res.Body, &a) == nil && a.Payment.House != "" {
			house = "; house mode: the host's own facilitator co-signed it and nothing moved on a chain (no USDC left your wallet)"
		}
		fmt.Fprintf(stdout, "paid: transaction %s on %s by %s%s%s\n", tx, res.Settlement.Network, res.Settlement.Payer, id, house)
	}
	if *paymentFile != "" && *paymentFile == owed {
		// the report it bought is saved: the file would only refuse the
		// next new payment with this --out (a re-send within 24 h would
		// still be answered with the same report)
		if err := os.Remove(owed); err == nil {
			fmt.Fprintf(stdout, "removed %s: it bought the report saved in %s\n", owed, *out)
		} else {
			fmt.Fprintf(stdout, "%s bought this report: remove it before paying anew with --out %s\n", owed, *out)
		}
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
		return callExit(callUnverified, fmt.Errorf("call: saved %s (transaction %q), but its signature is not checked: %w; check it later with: assay verify --keys URL %s", *out, tx, err, *out))
	}
	_, err = fmt.Fprintf(stdout, "saved %s (signature checked: key %s)\n", *out, kid)
	return err
}

// unanswered explains a call that ended without a report: nothing was
// charged when no payment or marker was sent; else the marker a 503 gave,
// or the payment itself (saved beside --out), redeems it later.
func unanswered(res *x402.Paid, err error, out, sentMarker string) error {
	why := "no answer"
	if err != nil {
		why = err.Error()
	}
	if res != nil && res.Status != 0 {
		var a struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(res.Body, &a)
		why = fmt.Sprintf("%d %s: %s", res.Status, a.Error.Code, a.Error.Message)
	}
	if sentMarker == "" && (res == nil || res.Payment == "" || !res.Reached) {
		// no payment reached the host (none was made, or every connection
		// that would have carried it failed to open)
		return callExit(callNotPaid, fmt.Errorf("call: %s; this call charged nothing", why))
	}
	return owe(res, why, out, sentMarker)
}

// owe ends a call that sent a payment or a marker and holds no report: it
// saves the payment beside out and says how to redeem it. The host may have
// taken the payment and died before answering: sent again, on this host or
// another on its store, it delivers the report and is never charged twice.
func owe(res *x402.Paid, why, out, sentMarker string) error {
	marker, payment, id := sentMarker, "", ""
	until := ""
	if res != nil {
		if res.Marker != "" {
			marker = res.Marker
		}
		payment, id = res.Payment, res.Identifier
		var a struct {
			Payment struct {
				Marker struct {
					ExpiresAt string `json:"expires_at"`
				} `json:"delivery_marker"`
			} `json:"payment"`
		}
		_ = json.Unmarshal(res.Body, &a)
		if a.Payment.Marker.ExpiresAt != "" && res.Marker != "" {
			until = ", until " + a.Payment.Marker.ExpiresAt
		}
	}
	redeem := ""
	if marker != "" {
		redeem = fmt.Sprintf("; redeem later with: assay call --marker %s (same URL and body%s)", marker, until)
	}
	if payment == "" {
		return callExit(callOwed, fmt.Errorf("call: %s%s", why, redeem))
	}
	if id != "" {
		id = ", payment id " + id
	}
	// what the host's own answer says of the payment, when there is one:
	// the message then agrees with it, instead of guessing
	status, taken := callOwed, "the payment may have been taken"
	switch hostSaysCharged(res) {
	case "false":
		// nothing to redeem: no file is left to refuse the next call
		// with this --out
		return callExit(callNotPaid, fmt.Errorf("call: %s%s; the host says nothing was charged: call again", why, redeem))
	case "true":
		taken = "the host says the payment was taken"
	}
	path := out + ".payment"
	if werr := os.WriteFile(path, []byte(payment+"\n"), 0o600); werr != nil {
		// the only copy left is this message: without it the payment is lost
		return callExit(status, fmt.Errorf("call: %s%s; %s and could not be saved (%w): save this line to a file and send it with assay call --payment FILE (same URL and body%s): %s", why, redeem, taken, werr, id, payment))
	}
	if marker != "" {
		return callExit(status, fmt.Errorf("call: %s%s; %s: or send the payment again with: assay call --payment %s (same URL and body%s; never charged twice)", why, redeem, taken, path, id))
	}
	return callExit(status, fmt.Errorf("call: %s; %s: send it again with: assay call --payment %s (same URL and body%s; never charged twice)", why, taken, path, id))
}

// hostSaysCharged is the answer's payment.charged ("true", "false"), or
// "" when there is no answer of the host's that says.
func hostSaysCharged(res *x402.Paid) string {
	if res == nil || res.Status == 0 {
		return ""
	}
	var a struct {
		Payment struct {
			Charged *bool `json:"charged"`
		} `json:"payment"`
	}
	if json.Unmarshal(res.Body, &a) != nil || a.Payment.Charged == nil {
		return ""
	}
	return strconv.FormatBool(*a.Payment.Charged)
}

// precheckCall is `assay call` on a pre-check URL: never a payment. The
// wallet is proved (sign-in-with-x) so the host counts the pre-check
// against its allowance: a challenge asked for (nothing counted), signed,
// sent with the body; a proof refused (the challenge expired meanwhile)
// is signed once more over the challenge the refusal carried. A host that
// gives no challenge is sent the pre-check unproved (it counts it against
// this machine's address, if it counts at all).
func precheckCall(target *url.URL, bodyArg, walletPath, out, keysURL string, stdout io.Writer) error {
	priv, err := wallet.Load(walletPath)
	if err != nil {
		return err
	}
	body, err := readCallBody(bodyArg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: time.Minute}
	e, err := siwx.AskChallenge(ctx, client, target.String())
	proved := err == nil
	if !proved {
		fmt.Fprintf(stdout, "the host gives no sign-in challenge (%v): the pre-check is sent unproved\n", err)
	}
	status, raw, err := postProved(ctx, client, target.String(), body, priv, e, proved)
	if err == nil && status == http.StatusUnauthorized && proved {
		if next, ok := siwx.FromAnswer(raw); ok {
			status, raw, err = postProved(ctx, client, target.String(), body, priv, next, true)
		}
	}
	if err != nil {
		return callExit(callNotPaid, fmt.Errorf("call: %w; a pre-check charges nothing", err))
	}
	var a struct {
		Error    struct{ Code, Message, Reason string } `json:"error"`
		FreeTier *struct {
			PerDay    int64  `json:"per_day"`
			Remaining int64  `json:"remaining"`
			ResetsAt  string `json:"resets_at"`
			Counted   string `json:"counted"`
		} `json:"free_tier"`
	}
	_ = json.Unmarshal(raw, &a)
	if status != http.StatusOK {
		reason := ""
		if a.Error.Reason != "" {
			reason = " (" + a.Error.Reason + ")"
		}
		return callExit(callNotPaid, fmt.Errorf("call: %d %s%s: %s; a pre-check charges nothing", status, a.Error.Code, reason, a.Error.Message))
	}
	if err := os.WriteFile(out, raw, 0o600); err != nil {
		return fmt.Errorf("call: save the answer (%d bytes) to %s: %w", len(raw), out, err)
	}
	if ft := a.FreeTier; ft != nil {
		whose := "this machine's address"
		if ft.Counted == "wallet" {
			whose = "wallet " + solana.EncodeBase58(priv.Public().(ed25519.PublicKey))
		}
		fmt.Fprintf(stdout, "free pre-check counted against %s: %d of %d left today (resets %s)\n", whose, ft.Remaining, ft.PerDay, ft.ResetsAt)
	}
	if keysURL == "" {
		keysURL = target.Scheme + "://" + target.Host + "/keys"
	}
	kid := ""
	jwks, err := readKeys(keysURL)
	if err == nil {
		kid, err = signing.Verify(raw, jwks)
	}
	if err != nil {
		return callExit(callUnverified, fmt.Errorf("call: saved %s, but its signature is not checked: %w; check it later with: assay verify --keys URL %s", out, err, out))
	}
	_, err = fmt.Fprintf(stdout, "saved %s (signature checked: key %s)\n", out, kid)
	return err
}

// postProved posts a pre-check, with the wallet's proof of e when proved.
func postProved(ctx context.Context, c *http.Client, target string, body []byte, priv ed25519.PrivateKey, e siwx.Extension, proved bool) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("pre-check: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if proved {
		p, err := siwx.Sign(e, priv)
		if err != nil {
			return 0, nil, err
		}
		h, err := p.Encode()
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set(siwx.Header, h)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("pre-check: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("pre-check: %w", err)
	}
	return resp.StatusCode, raw, nil
}

// readCallBody is the call's body: the file named, or stdin for "-".
func readCallBody(arg string) ([]byte, error) {
	var body []byte
	var err error
	if arg == "-" {
		body, err = io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	} else {
		body, err = os.ReadFile(arg)
	}
	if err != nil {
		return nil, fmt.Errorf("call: read body: %w", err)
	}
	return body, nil
}
