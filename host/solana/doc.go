// Package solana holds the narrow slice of Solana wire handling the host
// needs to take part in x402 "exact" payments on Solana without a node: a
// strict transaction codec, the address derivations the scheme relies on,
// the facilitator's verification policy, and the client-side builder.
//
// The package deliberately has no RPC client. Everything here is a pure
// function of its inputs, so the local facilitator can decide whether to
// co-sign a payment offline and a CLI client can produce the same bytes the
// official TypeScript client would. Checks that need chain state (does the
// source token account exist and hold enough, do the decimals match the
// mint, does the transaction simulate) are out of scope and stay with
// whoever eventually broadcasts.
package solana
