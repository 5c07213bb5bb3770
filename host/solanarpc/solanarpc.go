// Package solanarpc is the little of Solana's JSON-RPC API the host needs
// to take real payments: a recent blockhash for the 402, a simulation
// before anything is measured, the send and its confirmation, and the
// balances and transactions an operator reconciles against. Plain JSON-RPC
// 2.0 over HTTP; no SDK.
//
// Only payment transactions and public addresses are ever sent: nothing a
// caller submitted for audit reaches an RPC node.
package solanarpc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// Client talks to one RPC node.
type Client struct {
	url  string
	http *http.Client
	id   atomic.Int64
	// OnError, when set, is told the method of each call that failed
	// (metrics: the method names are this package's own).
	OnError func(method string)
}

// New is a client of the node at url.
func New(url string) *Client {
	return &Client{url: url, http: &http.Client{Timeout: 15 * time.Second}}
}

// URL is the node's address (for logs: an operator's own configuration).
func (c *Client) URL() string { return c.url }

// Error is an error the node answered (code and message are the node's;
// Data holds a failed preflight's transaction error).
type Error struct {
	Method  string
	Code    int
	Message string
	Data    json.RawMessage
}

func (e *Error) Error() string {
	return fmt.Sprintf("solana rpc %s: %d %s", e.Method, e.Code, e.Message)
}

// ErrTransport is a node that could not be reached or answered nonsense.
var ErrTransport = errors.New("solana rpc unreachable")

func (c *Client) call(ctx context.Context, method string, params []any, out any) error {
	err := c.do(ctx, method, params, out)
	if err != nil && c.OnError != nil {
		c.OnError(method)
	}
	return err
}

func (c *Client) do(ctx context.Context, method string, params []any, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %s: the node's URL does not parse", ErrTransport, method)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrTransport, method, withoutURL(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s: status %d", ErrTransport, method, resp.StatusCode)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%w: %s: not JSON-RPC", ErrTransport, method)
	}
	if r.Error != nil {
		return &Error{Method: method, Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("%w: %s: unexpected result", ErrTransport, method)
	}
	return nil
}

// Blockhash is a recent blockhash and the last block height it is valid at.
type Blockhash struct {
	Hash                 string
	LastValidBlockHeight uint64
}

// LatestBlockhash is the node's newest blockhash at commitment confirmed.
func (c *Client) LatestBlockhash(ctx context.Context) (Blockhash, error) {
	var r struct {
		Value struct {
			Blockhash            string `json:"blockhash"`
			LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
		} `json:"value"`
	}
	err := c.call(ctx, "getLatestBlockhash", []any{map[string]any{"commitment": "confirmed"}}, &r)
	return Blockhash{Hash: r.Value.Blockhash, LastValidBlockHeight: r.Value.LastValidBlockHeight}, err
}

// BlockhashValid is whether a transaction with this blockhash can still land.
func (c *Client) BlockhashValid(ctx context.Context, hash string) (bool, error) {
	var r struct {
		Value bool `json:"value"`
	}
	err := c.call(ctx, "isBlockhashValid", []any{hash, map[string]any{"commitment": "confirmed"}}, &r)
	return r.Value, err
}

// Simulation is a simulated transaction's outcome: Err is the node's
// transaction error (null when it would succeed).
type Simulation struct {
	Err  json.RawMessage
	Logs []string
}

// Failed is whether the simulated transaction would fail.
func (s Simulation) Failed() bool { return len(s.Err) > 0 && string(s.Err) != "null" }

// Simulate runs a signed transaction without landing it, signatures
// verified and its own blockhash kept (an expired one fails).
func (c *Client) Simulate(ctx context.Context, wire []byte) (Simulation, error) {
	var r struct {
		Value struct {
			Err  json.RawMessage `json:"err"`
			Logs []string        `json:"logs"`
		} `json:"value"`
	}
	err := c.call(ctx, "simulateTransaction", []any{base64.StdEncoding.EncodeToString(wire),
		map[string]any{"encoding": "base64", "sigVerify": true, "replaceRecentBlockhash": false, "commitment": "confirmed"}}, &r)
	return Simulation{Err: r.Value.Err, Logs: r.Value.Logs}, err
}

// Send submits a signed transaction (the node's preflight on) and returns
// its signature. A preflight failure is an *Error whose Data names the
// transaction error.
func (c *Client) Send(ctx context.Context, wire []byte) (string, error) {
	var sig string
	err := c.call(ctx, "sendTransaction", []any{base64.StdEncoding.EncodeToString(wire),
		map[string]any{"encoding": "base64", "preflightCommitment": "confirmed", "maxRetries": 5}}, &sig)
	return sig, err
}

// Status is a transaction's standing on the chain.
type Status struct {
	Slot uint64
	// Err is the transaction's error (null: it succeeded).
	Err json.RawMessage
	// Confirmation is processed, confirmed or finalized.
	Confirmation string
}

// Landed is whether the transaction is confirmed (or finalized).
func (s *Status) Landed() bool {
	return s != nil && (s.Confirmation == "confirmed" || s.Confirmation == "finalized")
}

// Succeeded is whether it landed without error.
func (s *Status) Succeeded() bool {
	return s.Landed() && (len(s.Err) == 0 || string(s.Err) == "null")
}

// SignatureStatus is what the node knows of a signature (nil: nothing,
// not even in its history).
func (c *Client) SignatureStatus(ctx context.Context, sig string) (*Status, error) {
	var r struct {
		Value []*struct {
			Slot               uint64          `json:"slot"`
			Err                json.RawMessage `json:"err"`
			ConfirmationStatus string          `json:"confirmationStatus"`
		} `json:"value"`
	}
	if err := c.call(ctx, "getSignatureStatuses", []any{[]string{sig}, map[string]any{"searchTransactionHistory": true}}, &r); err != nil {
		return nil, err
	}
	if len(r.Value) != 1 || r.Value[0] == nil {
		return nil, nil
	}
	v := r.Value[0]
	return &Status{Slot: v.Slot, Err: v.Err, Confirmation: v.ConfirmationStatus}, nil
}

// GenesisHash is the network's genesis hash: which network the node
// serves (a CAIP-2 Solana id is its first 32 characters).
func (c *Client) GenesisHash(ctx context.Context) (string, error) {
	var h string
	err := c.call(ctx, "getGenesisHash", []any{}, &h)
	return h, err
}

// Balance is an account's lamports (0 for none).
func (c *Client) Balance(ctx context.Context, addr string) (uint64, error) {
	var r struct {
		Value uint64 `json:"value"`
	}
	err := c.call(ctx, "getBalance", []any{addr, map[string]any{"commitment": "confirmed"}}, &r)
	return r.Value, err
}

// AccountExists is whether the address holds an account.
func (c *Client) AccountExists(ctx context.Context, addr string) (bool, error) {
	var r struct {
		Value json.RawMessage `json:"value"`
	}
	if err := c.call(ctx, "getAccountInfo", []any{addr, map[string]any{"encoding": "base64", "commitment": "confirmed"}}, &r); err != nil {
		return false, err
	}
	return len(r.Value) > 0 && string(r.Value) != "null", nil
}

// TokenBalance is a token account's amount in atomic units; ok is false
// when the account does not exist.
func (c *Client) TokenBalance(ctx context.Context, addr string) (amount uint64, ok bool, err error) {
	exists, err := c.AccountExists(ctx, addr)
	if err != nil || !exists {
		return 0, false, err
	}
	var r struct {
		Value struct {
			Amount string `json:"amount"`
		} `json:"value"`
	}
	if err := c.call(ctx, "getTokenAccountBalance", []any{addr, map[string]any{"commitment": "confirmed"}}, &r); err != nil {
		return 0, true, err
	}
	n, err := strconv.ParseUint(r.Value.Amount, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: getTokenAccountBalance: amount", ErrTransport)
	}
	return n, true, nil
}

// Transaction is a landed transaction: its wire bytes, the fee it paid
// and its token accounts' balances before and after.
type Transaction struct {
	Slot        uint64
	FeeLamports int64
	Err         json.RawMessage
	Wire        []byte
	Pre, Post   []TokenBalance
}

// TokenBalance is one token account's balance in a transaction's meta.
type TokenBalance struct {
	AccountIndex int
	Mint, Owner  string
	Amount       int64
}

// Failed reports whether the transaction landed with an error (its
// transfers did not happen; only its fee was taken).
func (t *Transaction) Failed() bool { return len(t.Err) > 0 && string(t.Err) != "null" }

// Received is what owner's token accounts of mint gained in t (negative: lost).
func (t *Transaction) Received(owner, mint string) int64 {
	var n int64
	for _, b := range t.Post {
		if b.Owner == owner && b.Mint == mint {
			n += b.Amount
		}
	}
	for _, b := range t.Pre {
		if b.Owner == owner && b.Mint == mint {
			n -= b.Amount
		}
	}
	return n
}

type tokenBalanceJSON struct {
	AccountIndex  int    `json:"accountIndex"`
	Mint          string `json:"mint"`
	Owner         string `json:"owner"`
	UITokenAmount struct {
		Amount string `json:"amount"`
	} `json:"uiTokenAmount"`
}

func tokenBalances(in []tokenBalanceJSON) ([]TokenBalance, error) {
	out := make([]TokenBalance, 0, len(in))
	for _, b := range in {
		n, err := strconv.ParseInt(b.UITokenAmount.Amount, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: getTransaction: token balance", ErrTransport)
		}
		out = append(out, TokenBalance{AccountIndex: b.AccountIndex, Mint: b.Mint, Owner: b.Owner, Amount: n})
	}
	return out, nil
}

// GetTransaction is a landed transaction (nil: the node has none).
func (c *Client) GetTransaction(ctx context.Context, sig string) (*Transaction, error) {
	var r *struct {
		Slot uint64 `json:"slot"`
		Meta struct {
			Fee  int64              `json:"fee"`
			Err  json.RawMessage    `json:"err"`
			Pre  []tokenBalanceJSON `json:"preTokenBalances"`
			Post []tokenBalanceJSON `json:"postTokenBalances"`
		} `json:"meta"`
		Transaction []string `json:"transaction"`
	}
	if err := c.call(ctx, "getTransaction", []any{sig, map[string]any{"encoding": "base64", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}}, &r); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, nil
	}
	t := &Transaction{Slot: r.Slot, FeeLamports: r.Meta.Fee, Err: r.Meta.Err}
	var err error
	if t.Pre, err = tokenBalances(r.Meta.Pre); err != nil {
		return nil, err
	}
	if t.Post, err = tokenBalances(r.Meta.Post); err != nil {
		return nil, err
	}
	if len(r.Transaction) > 0 {
		wire, err := base64.StdEncoding.DecodeString(r.Transaction[0])
		if err != nil {
			return nil, fmt.Errorf("%w: getTransaction: transaction", ErrTransport)
		}
		t.Wire = wire
	}
	return t, nil
}

// SignatureInfo is one transaction that touched an address.
type SignatureInfo struct {
	Signature string
	Slot      uint64
	Err       json.RawMessage
	// Memo is the node's rendering of the transaction's memos ("[len]
	// text", joined by "; "); nil when the node gives none.
	Memo *string
}

// Signatures lists the transactions that touched addr, newest first, at
// most limit (1,000 at most) before the signature before ("" = the newest).
func (c *Client) Signatures(ctx context.Context, addr, before string, limit int) ([]SignatureInfo, error) {
	opts := map[string]any{"limit": limit, "commitment": "confirmed"}
	if before != "" {
		opts["before"] = before
	}
	var r []struct {
		Signature string          `json:"signature"`
		Slot      uint64          `json:"slot"`
		Err       json.RawMessage `json:"err"`
		Memo      *string         `json:"memo"`
	}
	if err := c.call(ctx, "getSignaturesForAddress", []any{addr, opts}, &r); err != nil {
		return nil, err
	}
	out := make([]SignatureInfo, len(r))
	for i, s := range r {
		out[i] = SignatureInfo{Signature: s.Signature, Slot: s.Slot, Err: s.Err, Memo: s.Memo}
	}
	return out, nil
}

// Control calls a method outside Solana's API that a test node offers
// (the LiteSVM server's litesvm_* methods), its result ignored.
func (c *Client) Control(ctx context.Context, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	return c.call(ctx, method, params, nil)
}

// withoutURL is a transport error without the URL net/http puts in it: a
// node's URL often carries its API key, and these errors reach the log and
// the preflight's findings.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
