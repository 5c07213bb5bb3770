package x402

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
)

// Resolver learns from the chain what became of a claim left settling (a
// crash's, or a settlement whose answer never came): the chain decides,
// never a timer.
type Resolver interface {
	Resolve(ctx context.Context, c store.Claim) (Resolution, Landing, error)
}

// Landing is a landed claim's transaction and the fee it paid.
type Landing struct {
	TxID        string
	FeeLamports *int64
}

// resolveByID looks a transaction up by its id. The blockhash is read
// first: once it has expired the transaction can no longer land, so a
// status read after it that finds nothing is final.
func resolveByID(ctx context.Context, rpc *solanarpc.Client, txID, blockhash string) (Resolution, Landing, error) {
	valid, err := rpc.BlockhashValid(ctx, blockhash)
	if err != nil {
		return Unknown, Landing{}, err
	}
	st, err := rpc.SignatureStatus(ctx, txID)
	if err != nil {
		return Unknown, Landing{}, err
	}
	switch {
	case st.Succeeded():
		l := Landing{TxID: txID}
		if tx, err := rpc.GetTransaction(ctx, txID); err == nil && tx != nil {
			l.FeeLamports = &tx.FeeLamports
		}
		return Landed, l, nil
	case st.Landed():
		return NeverLanded, Landing{}, nil // landed and failed: nothing moved
	case st != nil || valid:
		return Unknown, Landing{}, nil // not yet confirmed, or it still can land
	}
	return NeverLanded, Landing{}, nil
}

// ChainLookup resolves claims on the chain beside a remote facilitator,
// whose transaction ids the host learns only from its answer: a claim is
// found by its memo among the transfers into pay_to's token account. It
// also gives the 402 a live blockhash, so a payer needs no RPC of its own.
type ChainLookup struct {
	rpc                        *solanarpc.Client
	payTo, asset, tokenAccount string
	// MaxPages bounds the history read for one claim (1,000 transactions
	// a page; default 10): past it the claim stays unknown, never guessed.
	MaxPages int

	hashes *blockhashCache
}

// NewChainLookup looks claims up through rpc among the transfers of asset
// into payTo's associated token account.
func NewChainLookup(rpc *solanarpc.Client, payTo, asset string) (*ChainLookup, error) {
	owner, err := solana.ParsePublicKey(payTo)
	if err != nil {
		return nil, errors.New("x402: chain lookup: pay_to is not a Solana address")
	}
	mint, err := solana.ParsePublicKey(asset)
	if err != nil {
		return nil, errors.New("x402: chain lookup: the asset is not a Solana address")
	}
	ata, err := solana.FindAssociatedTokenAddress(owner, mint, solana.TokenProgram())
	if err != nil {
		return nil, err
	}
	return &ChainLookup{rpc: rpc, payTo: payTo, asset: asset, tokenAccount: ata.String(), MaxPages: 10,
		hashes: &blockhashCache{rpc: rpc, every: 10 * time.Second}}, nil
}

// Resolve implements Resolver.
func (l *ChainLookup) Resolve(ctx context.Context, c store.Claim) (Resolution, Landing, error) {
	switch {
	case c.Blockhash == "":
		return Unknown, Landing{}, nil
	case c.TxID != "":
		return resolveByID(ctx, l.rpc, c.TxID, c.Blockhash)
	case c.Memo == "":
		return Unknown, Landing{}, nil
	}
	valid, err := l.rpc.BlockhashValid(ctx, c.Blockhash)
	if err != nil {
		return Unknown, Landing{}, err
	}
	sig, whole, err := l.findMemo(ctx, c.Memo)
	switch {
	case err != nil:
		return Unknown, Landing{}, err
	case sig != "":
		return resolveByID(ctx, l.rpc, sig, c.Blockhash)
	case whole && !valid:
		return NeverLanded, Landing{}, nil
	}
	return Unknown, Landing{}, nil
}

// findMemo is the landed, successful transfer into the token account that
// carries memo; whole says the account's history was read to its start.
func (l *ChainLookup) findMemo(ctx context.Context, memo string) (sig string, whole bool, err error) {
	before := ""
	for range l.MaxPages {
		page, err := l.rpc.Signatures(ctx, l.tokenAccount, before, 1000)
		if err != nil {
			return "", false, err
		}
		for _, s := range page {
			if len(s.Err) > 0 && string(s.Err) != "null" {
				continue
			}
			if s.Memo != nil && !strings.Contains(*s.Memo, memo) {
				continue
			}
			tx, err := l.rpc.GetTransaction(ctx, s.Signature)
			if err != nil {
				return "", false, err
			}
			if tx != nil && !tx.Failed() && txMemo(tx.Wire) == memo && tx.Received(l.payTo, l.asset) > 0 {
				return s.Signature, true, nil
			}
		}
		if len(page) < 1000 {
			return "", true, nil
		}
		before = page[len(page)-1].Signature
	}
	return "", false, nil
}

// TransactionFee is the fee the chain charged txID (nil when the node
// does not answer within 5 s: the line is written without it).
func (l *ChainLookup) TransactionFee(ctx context.Context, txID string) *int64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tx, err := l.rpc.GetTransaction(ctx, txID)
	if err != nil || tx == nil {
		return nil
	}
	return &tx.FeeLamports
}

// txMemo is a wire transaction's first memo ("" when none).
func txMemo(wire []byte) string {
	tx, err := solana.DecodeTransaction(wire)
	if err != nil {
		return ""
	}
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIndex) < len(tx.Message.AccountKeys) && tx.Message.AccountKeys[ix.ProgramIndex] == solana.MemoProgram() {
			return string(ix.Data)
		}
	}
	return ""
}

// RecentBlockhash is the node's blockhash for a 402, read at most every
// 10 s (the last one while the node does not answer).
func (l *ChainLookup) RecentBlockhash(ctx context.Context) (solanarpc.Blockhash, bool) {
	return l.hashes.get(ctx)
}
