package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/x402"
)

// The chain's node and network come from the environment (a deployment
// names them there, never on a command line): the URL from the file
// ASSAY_SOLANA_RPC_FILE names, mainnet or devnet by name; a flag wins.
func TestTheChainFromTheEnvironment(t *testing.T) {
	rpc := filepath.Join(t.TempDir(), "solana_rpc")
	if err := os.WriteFile(rpc, []byte("https://rpc.example/?api-key=k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvSolanaRPCFile, rpc)
	t.Setenv(EnvNetwork, "devnet")
	cfg, err := loadConfig("", func(*config.Config) map[*string]*string { return nil })
	if err != nil || cfg.SolanaRPC != "https://rpc.example/?api-key=k" || cfg.Network != x402.SolanaDevnet {
		t.Fatalf("from the environment: %q %q %v", cfg.SolanaRPC, cfg.Network, err)
	}
	flag := "http://127.0.0.1:8899"
	cfg, _ = loadConfig("", func(c *config.Config) map[*string]*string { return map[*string]*string{&flag: &c.SolanaRPC} })
	if cfg.SolanaRPC != flag {
		t.Errorf("a flag: %q", cfg.SolanaRPC)
	}
	_ = os.WriteFile(rpc, []byte("\n"), 0o600)
	if _, err := loadConfig("", func(*config.Config) map[*string]*string { return nil }); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty file: %v", err)
	}
	// local without a node is refused at start, naming the fix
	t.Setenv(EnvSolanaRPCFile, "")
	err = run([]string{"serve", "--data-dir", t.TempDir(), "--payments", "local"}, os.Stderr, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "needs its node: set solana_rpc") || !strings.Contains(err.Error(), "--payments house") {
		t.Errorf("local without a node: %v", err)
	}
}
