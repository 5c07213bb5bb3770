package x402

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
)

// The official exact-scheme reasons a chain's answer can give.
const (
	ReasonSimulationFailed   = "invalid_exact_svm_payload_transaction_simulation_failed"
	ReasonSenderATAMissing   = "invalid_exact_svm_payload_transaction_sender_ata_not_found"
	ReasonReceiverATAMissing = "invalid_exact_svm_payload_transaction_receiver_ata_not_found"
	// ReasonTransactionFailed: the transaction landed and failed (the fee
	// was paid, no token moved).
	ReasonTransactionFailed = "transaction_failed"
	// ReasonExpired: the transaction is not on the chain and its blockhash
	// expired, so it never can be: nothing was taken; pay again.
	ReasonExpired = "transaction_expired_never_landed"
)

// ChainOptions bound the embedded facilitator's work on a chain.
type ChainOptions struct {
	// ConfirmWithin bounds the wait for a sent transaction to be
	// confirmed (default 30 s); past it the outcome is unknown and the
	// claim stays settling, resolved from the chain later.
	ConfirmWithin time.Duration
	// BlockhashFor is how long a blockhash read from the node is handed
	// out in 402s (default 10 s: a blockhash lasts 150 blocks, about a
	// minute, so a client has most of it left).
	BlockhashFor time.Duration
	// Poll is the interval between confirmation checks (default 250 ms).
	Poll time.Duration
}

// chain is the embedded facilitator's Solana RPC node.
type chain struct {
	rpc  *solanarpc.Client
	opts ChainOptions

	feePayer string
	hashes   *blockhashCache

	mu sync.Mutex
	// the fee payer's balance, read at most every 5 s
	balance     uint64
	balanceRead time.Time
}

// ErrFeePayerShort is a fee payer whose SOL cannot pay a transaction's
// fee: the host refuses to co-sign (503 payment_unavailable, nothing
// charged) until the operator funds it.
var ErrFeePayerShort = errors.New("the fee payer cannot pay a transaction's fee: fund it with SOL")

// WithChain makes the embedded facilitator settle on a real chain through
// rpc: the 402 carries the node's recent blockhash, verification simulates
// the co-signed transaction, settlement sends it and waits for
// confirmation, and the ledger's transaction and fee are the chain's.
func (l *Local) WithChain(rpc *solanarpc.Client, opts ChainOptions) *Local {
	if opts.ConfirmWithin == 0 {
		opts.ConfirmWithin = 30 * time.Second
	}
	if opts.BlockhashFor == 0 {
		opts.BlockhashFor = 10 * time.Second
	}
	if opts.Poll == 0 {
		opts.Poll = 250 * time.Millisecond
	}
	l.chain = &chain{rpc: rpc, opts: opts, feePayer: l.addr, hashes: &blockhashCache{rpc: rpc, every: opts.BlockhashFor}}
	return l
}

// FeePayerLamports is the fee payer's SOL balance as the chain says (ok
// false without a chain, or when the node does not answer).
func (l *Local) FeePayerLamports(ctx context.Context) (uint64, bool) {
	if l.chain == nil {
		return 0, false
	}
	n, err := l.chain.feePayerBalance(ctx, true)
	return n, err == nil
}

func (c *chain) feePayerBalance(ctx context.Context, fresh bool) (uint64, error) {
	c.mu.Lock()
	if !fresh && !c.balanceRead.IsZero() && time.Since(c.balanceRead) < 5*time.Second {
		defer c.mu.Unlock()
		return c.balance, nil
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, err := c.rpc.Balance(ctx, c.feePayer)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.balance, c.balanceRead = n, time.Now()
	c.mu.Unlock()
	return n, nil
}

// RecentBlockhash is a blockhash for the 402 (ok false without a chain, or
// when the node cannot be reached and none was read before).
func (l *Local) RecentBlockhash(ctx context.Context) (solanarpc.Blockhash, bool) {
	if l.chain == nil {
		return solanarpc.Blockhash{}, false
	}
	return l.chain.hashes.get(ctx)
}

// verify checks on the chain what the transaction's bytes cannot say:
// both token accounts exist, and the co-signed transaction would succeed
// now (the payer holds the tokens, the blockhash is live).
func (c *chain) verify(ctx context.Context, ck *checked) (string, error) {
	bal, err := c.feePayerBalance(ctx, false)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrFacilitator, err)
	}
	fee := ck.transfer.FeeLamports(len(ck.tx.Signatures))
	if bal < fee {
		// a cached balance may predate the operator's top-up
		if bal, err = c.feePayerBalance(ctx, true); err != nil {
			return "", fmt.Errorf("%w: %v", ErrFacilitator, err)
		}
	}
	if bal < fee {
		return "", fmt.Errorf("%w: %w (%s holds %d lamports; a transaction's fee is %d)", ErrFacilitator, ErrFeePayerShort, c.feePayer, bal, fee)
	}
	for _, a := range []struct {
		addr, reason string
	}{{ck.transfer.Source.String(), ReasonSenderATAMissing}, {ck.transfer.Destination.String(), ReasonReceiverATAMissing}} {
		ok, err := c.rpc.AccountExists(ctx, a.addr)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrFacilitator, err)
		}
		if !ok {
			return a.reason, nil
		}
	}
	sim, err := c.rpc.Simulate(ctx, ck.tx.Serialize())
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrFacilitator, err)
	}
	if sim.Failed() {
		if strings.Contains(string(sim.Err), "BlockhashNotFound") {
			c.hashes.forget()
		}
		return ReasonSimulationFailed, nil
	}
	return "", nil
}

// settle sends the co-signed transaction and waits for it to be
// confirmed. A transaction already on the chain (a re-send after the host
// died between sending and recording) is not sent twice: its status
// decides. An outcome not known within ConfirmWithin is an error: the
// claim stays settling, and nothing is delivered until the chain says.
func (c *chain) settle(ctx context.Context, ck *checked, network string) (*Settled, error) {
	payer := ck.transfer.Payer.String()
	st, err := c.rpc.SignatureStatus(ctx, ck.id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFacilitator, err)
	}
	if st == nil {
		// not on the chain: if its blockhash expired it never can be, and
		// sending it would only be refused
		valid, err := c.rpc.BlockhashValid(ctx, solana.EncodeBase58(ck.tx.Message.RecentBlockhash[:]))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFacilitator, err)
		}
		if !valid {
			return &Settled{Reason: ReasonExpired, NeverLanded: true, Payer: payer, Network: network}, nil
		}
		if _, err := c.rpc.Send(ctx, ck.tx.Serialize()); err != nil {
			var rpcErr *solanarpc.Error
			if errors.As(err, &rpcErr) && len(rpcErr.Data) > 0 && !strings.Contains(string(rpcErr.Data), "AlreadyProcessed") {
				// the node's preflight refused it: nothing was sent
				if strings.Contains(string(rpcErr.Data), "BlockhashNotFound") {
					c.hashes.forget()
				}
				return &Settled{Reason: ReasonSimulationFailed, Payer: payer, Network: network}, nil
			}
			if !errors.As(err, &rpcErr) {
				// sent or not, unknown: the chain decides later
				return nil, fmt.Errorf("%w: %v", ErrFacilitator, err)
			}
		}
	}
	deadline := time.Now().Add(c.opts.ConfirmWithin)
	for {
		st, err = c.rpc.SignatureStatus(ctx, ck.id)
		if err == nil && st.Landed() {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: transaction %s not confirmed within %s", ErrFacilitator, ck.id, c.opts.ConfirmWithin)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", ErrFacilitator, ctx.Err())
		case <-time.After(c.opts.Poll):
		}
	}
	if !st.Succeeded() {
		return &Settled{Reason: ReasonTransactionFailed, Payer: payer, Network: network}, nil
	}
	fee := int64(ck.transfer.FeeLamports(len(ck.tx.Signatures)))
	if tx, err := c.rpc.GetTransaction(ctx, ck.id); err == nil && tx != nil {
		fee = tx.FeeLamports
	}
	return &Settled{TxID: ck.id, Payer: payer, Network: network, FeeLamports: &fee}, nil
}

// Resolution is what the chain says of a claim's transaction.
type Resolution int

// What the chain can say.
const (
	// Unknown: not on the chain yet, and it still can land.
	Unknown Resolution = iota
	// Landed: confirmed and succeeded; the price moved.
	Landed
	// NeverLanded: not on the chain and its blockhash expired, or landed
	// and failed: nothing of the price moved.
	NeverLanded
)

// Resolve implements Resolver: the embedded facilitator knows each
// transaction's id and blockhash before it sends it.
func (l *Local) Resolve(ctx context.Context, c store.Claim) (Resolution, Landing, error) {
	if l.chain == nil || c.TxID == "" || c.Blockhash == "" {
		return Unknown, Landing{}, nil
	}
	return resolveByID(ctx, l.chain.rpc, c.TxID, c.Blockhash)
}
