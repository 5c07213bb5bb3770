package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assay-audit/assay/host/mcplocal"
	"github.com/assay-audit/assay/host/version"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// mcpCmd is `assay mcp URL --wallet FILE`: a stdio MCP server for an
// agent's own machine that lists the host's tools, pays from the wallet
// within the caps, and checks every report's signature before returning it.
func mcpCmd(args []string) error {
	fs := newFlags("mcp")
	walletPath := fs.String("wallet", "", "payer keypair file (assay wallet new): the paid tools pay from it")
	perCall := fs.String("max-per-call", "0.50", "the most one call may cost, in USD (USDC); a dearer call is refused before anything is signed")
	session := fs.String("max-session", "5.00", "the most this process may spend in all, in USD (USDC)")
	rpcURL := fs.String("solana-rpc", os.Getenv("SOLANA_RPC_URL"), "a Solana JSON-RPC node: the wallet's balance checked before signing, a blockhash when a 402 has none (default: SOLANA_RPC_URL, else the network's public node when a 402 has no blockhash; none: no node at all)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *walletPath == "" {
		return errors.New("mcp: assay mcp <host URL> --wallet FILE [--max-per-call USD] [--max-session USD] [--solana-rpc URL]")
	}
	host, err := url.Parse(pos[0])
	if err != nil || host.Host == "" || (host.Scheme != "http" && host.Scheme != "https") {
		return errors.New("mcp: the host's URL must be absolute (https://…)")
	}
	maxCall, err := usdcUnits(*perCall)
	if err != nil {
		return fmt.Errorf("mcp: --max-per-call: %w", err)
	}
	maxSession, err := usdcUnits(*session)
	if err != nil {
		return fmt.Errorf("mcp: --max-session: %w", err)
	}
	priv, err := wallet.Load(*walletPath)
	if err != nil {
		return err
	}
	payer := &x402.Payer{Wallet: priv, Client: nil}
	payer.Chain, payer.Nodes = payerNode(*rpcURL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, _, err := mcplocal.New(start, mcplocal.Config{Host: strings.TrimRight(host.String(), "/"), Payer: payer,
		MaxPerCall: maxCall, MaxSession: maxSession, Version: version.String()})
	if err != nil {
		return err
	}
	// stdout is the protocol's: nothing else is written there
	err = s.Run(ctx, &mcp.StdioTransport{MaxLineLength: mcplocal.MaxFile * 2})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// usdcUnits is a USD amount ("0.50") in USDC's atomic units (millionths).
func usdcUnits(s string) (uint64, error) {
	f, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	if err != nil || f < 0 || f > 1e9 || math.IsNaN(f) {
		return 0, errors.New("expected a USD amount such as 0.50")
	}
	return uint64(math.Round(f * 1e6)), nil
}
