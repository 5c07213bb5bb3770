// Package chaintest runs a real Solana runtime for the tests that move
// tokens: LiteSVM behind the repository's own JSON-RPC server
// (host/internal/testdata/litesvm, node), with helpers that put a USDC mint, token
// accounts and SOL on it the way a devnet faucet would.
package chaintest

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/nodedeps"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
)

// Chain is one running LiteSVM behind JSON-RPC.
type Chain struct {
	URL string
	RPC *solanarpc.Client
	// Authority is the USDC mint's authority (the test's own key).
	Authority ed25519.PrivateKey
	mint      solana.PublicKey
	requests  string // the file the server appends every request body to
}

// Start runs the server (npm ci in its folder first when its packages are
// missing) and stops it when the test ends. A machine without node skips
// the test, saying so, unless ASSAY_REQUIRE_CHAIN is set (CI).
func Start(tb testing.TB) *Chain {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("ASSAY_REQUIRE_CHAIN") != "" {
			tb.Fatal("node is not installed: the chain tests need it (ASSAY_REQUIRE_CHAIN is set)")
		}
		tb.Skip("node is not installed: the tests on a Solana runtime need it")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "litesvm")
	nodedeps.Install(tb, dir, "litesvm")
	requests := filepath.Join(tb.TempDir(), "rpc-requests.log")
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LITESVM_REQUEST_LOG="+requests)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close() // the server exits when its input closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
	}()
	var p string
	select {
	case p = <-port:
	case <-time.After(30 * time.Second):
		tb.Fatal("the LiteSVM RPC server did not start within 30 s")
	}
	_, auth, _ := ed25519.GenerateKey(nil)
	c := &Chain{URL: "http://127.0.0.1:" + p, Authority: auth, requests: requests}
	c.RPC = solanarpc.New(c.URL)
	return c
}

// Requests is every JSON-RPC request body the node was sent, one a line
// (for custody tests: what left the host for the chain).
func (c *Chain) Requests(tb testing.TB) string {
	b, err := os.ReadFile(c.requests)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return string(b)
}

func (c *Chain) control(tb testing.TB, method string, params ...any) {
	tb.Helper()
	if err := c.RPC.Control(context.Background(), method, params...); err != nil {
		tb.Fatalf("%s: %v", method, err)
	}
}

// Airdrop gives addr lamports.
func (c *Chain) Airdrop(tb testing.TB, addr string, lamports uint64) {
	c.control(tb, "litesvm_airdrop", addr, lamports)
}

// ExpireBlockhash ends the current blockhash's life.
func (c *Chain) ExpireBlockhash(tb testing.TB) { c.control(tb, "litesvm_expireBlockhash") }

// HoldConfirmations makes sent transactions land but stay unknown to
// getSignatureStatuses until released.
func (c *Chain) HoldConfirmations(tb testing.TB, on bool) {
	c.control(tb, "litesvm_holdConfirmations", on)
}

// DropSends makes sendTransaction answer a signature and land nothing.
func (c *Chain) DropSends(tb testing.TB, on bool) { c.control(tb, "litesvm_dropSends", on) }

// Mint puts a 6-decimal mint at addr (the devnet USDC address, so the
// official client's spend controls accept it) with Authority as its mint
// authority.
func (c *Chain) Mint(tb testing.TB, addr string) {
	tb.Helper()
	mint, err := solana.ParsePublicKey(addr)
	if err != nil {
		tb.Fatal(err)
	}
	c.mint = mint
	d := make([]byte, 82)
	binary.LittleEndian.PutUint32(d[0:], 1)
	copy(d[4:36], c.Authority.Public().(ed25519.PublicKey))
	binary.LittleEndian.PutUint64(d[36:], 1<<50)
	d[44], d[45] = 6, 1
	c.control(tb, "litesvm_setAccount", addr, map[string]any{"lamports": 1461600, "data": base64.StdEncoding.EncodeToString(d), "owner": solana.TokenProgram().String()})
}

// TokenAccount gives owner its associated token account of the mint,
// holding amount atomic units, and returns its address.
func (c *Chain) TokenAccount(tb testing.TB, owner string, amount uint64) string {
	tb.Helper()
	o, err := solana.ParsePublicKey(owner)
	if err != nil {
		tb.Fatal(err)
	}
	ata, err := solana.FindAssociatedTokenAddress(o, c.mint, solana.TokenProgram())
	if err != nil {
		tb.Fatal(err)
	}
	d := make([]byte, 165)
	copy(d[0:32], c.mint[:])
	copy(d[32:64], o[:])
	binary.LittleEndian.PutUint64(d[64:], amount)
	d[108] = 1 // initialized
	c.control(tb, "litesvm_setAccount", ata.String(), map[string]any{"lamports": 2039280, "data": base64.StdEncoding.EncodeToString(d), "owner": solana.TokenProgram().String()})
	return ata.String()
}

// ATA is owner's associated token account of the mint.
func (c *Chain) ATA(tb testing.TB, owner string) string {
	tb.Helper()
	o, err := solana.ParsePublicKey(owner)
	if err != nil {
		tb.Fatal(err)
	}
	ata, err := solana.FindAssociatedTokenAddress(o, c.mint, solana.TokenProgram())
	if err != nil {
		tb.Fatal(err)
	}
	return ata.String()
}

// Tokens is owner's token balance (0 without an account).
func (c *Chain) Tokens(tb testing.TB, owner string) uint64 {
	tb.Helper()
	n, _, err := c.RPC.TokenBalance(context.Background(), c.ATA(tb, owner))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
