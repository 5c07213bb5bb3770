package solana

import (
	"crypto/ed25519"
	"encoding/hex"
	"testing"
)

func mustKey(t testing.TB, s string) PublicKey {
	t.Helper()
	k, err := ParsePublicKey(s)
	if err != nil {
		t.Fatalf("ParsePublicKey(%q): %v", s, err)
	}
	return k
}

// Expected ATAs come from other implementations' published tests, never
// from this package:
//   - kevinheavey/solders tests/token/test_ata.py (test_ata): one owner and
//     mint under both Token and Token-2022;
//   - metaplex-foundation/Solana.Swift
//     Tests/SolanaTests/AssociatedTokenProgramTests.swift: USDC;
//   - trustwallet/wallet-core tests/chains/Solana/TransactionTests.cpp
//     (CreateTokenAccountTransaction, data from `spl-token create-account`);
//   - a Rust test in the public code index whose file begins
//     `use crate::spl::{get_associated_token_address, ...}` and whose values
//     were "obtained with spl-token address --owner ... --url mainnet-beta"
//     (repository not identified by the index): USDC and the Token-2022
//     BonkEarn mint.
func TestFindAssociatedTokenAddressKnown(t *testing.T) {
	cases := []struct {
		name, owner, mint string
		program           PublicKey
		want              string
	}{
		{"solders/token", "5d21Nx19eZBThbExCn1ESAk3RGmE8Rdp9PKMWZ2VedSK", "3CqfBkrmRsK3uXZaxktvTeeBkJp4yeFKs4mUi2jhKExz", TokenProgram(), "Aumq2SPVzZccYL3UAhvXoDDkNYLZr2zpyxLuJiyx79te"},
		{"solders/token-2022", "5d21Nx19eZBThbExCn1ESAk3RGmE8Rdp9PKMWZ2VedSK", "3CqfBkrmRsK3uXZaxktvTeeBkJp4yeFKs4mUi2jhKExz", Token2022Program(), "4xoV4cxTM3GcaWP7bKbUdu2Gp9P9nEgpmCPV8ykFGo4U"},
		{"Solana.Swift/usdc", "3h1zGmCwsRJnVk5BuRNMLsPaQu1y2aqXqXDWYCgrp5UG", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", TokenProgram(), "3uetDDizgTtadDHZzyy9BqxrjQcozMEkxzbKhfZF4tG3"},
		{"wallet-core/srm", "B1iGmDJdvmxyUiYM8UEo2Uw2D58EmUrw4KyLYMmrhf8V", "SRMuApVNdxXokk5GT7XD5cUUgXMBCoAz2LHeuAoKWRt", TokenProgram(), "EDNd1ycsydWYwVmrYZvqYazFqwk1QjBgAUKFjBoz1jKP"},
		{"spl-token-cli/usdc", "AAAGuCgkmxYDTiBvzx1QT5XEjqXPRtQaiEXQo4gatD2o", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", TokenProgram(), "Cra8woRQhnHsGAmFWcCN1m7A9J44ykNfGpehi6dMBuKR"},
		{"spl-token-cli/bern-2022", "AAAGuCgkmxYDTiBvzx1QT5XEjqXPRtQaiEXQo4gatD2o", "CKfatsPMUf8SkiURsDXs7eK6GWb4Jsd6UDbs7twMCWxo", Token2022Program(), "GPtCoaz35vdCrFbyhxcRrkYvECrUkrBX6CoRZEv8EQDw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := FindAssociatedTokenAddress(mustKey(t, c.owner), mustKey(t, c.mint), c.program)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != c.want {
				t.Errorf("ATA = %s, want %s", got, c.want)
			}
			if isOnCurve(got) {
				t.Error("an ATA must be off the curve")
			}
		})
	}
}

// LMAX-Exchange/solana4j
// message-encoding/src/test/java/com/lmax/solana4j/programs/BpfUpgradeableProgramTest.java:
// the upgradeable loader's programdata PDA, bump 255.
func TestFindProgramAddressKnown(t *testing.T) {
	program := mustKey(t, "BPFLoaderUpgradeab1e11111111111111111111111")
	seed := mustKey(t, "EYB1g5R8beNtVqDpKpmkKWtLdhBY8Wh7q3QT3U3fbw7y")
	got, bump, err := FindProgramAddress([][]byte{seed[:]}, program)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "6HRdAxQMgxR9vxnfsfeYYuyyEabzJ8SiA3H2SJ4NFU9d" || bump != 255 {
		t.Errorf("PDA = %s bump %d, want 6HRdAxQMgxR9vxnfsfeYYuyyEabzJ8SiA3H2SJ4NFU9d bump 255", got, bump)
	}
}

func TestFindProgramAddressLimits(t *testing.T) {
	if _, _, err := FindProgramAddress([][]byte{make([]byte, 33)}, SystemProgram()); err == nil {
		t.Error("a 33-byte seed must be refused")
	}
	if _, _, err := FindProgramAddress(make([][]byte, 16), SystemProgram()); err == nil {
		t.Error("16 seeds plus the bump must be refused")
	}
	if _, _, err := FindProgramAddress(make([][]byte, 15), SystemProgram()); err != nil {
		t.Errorf("15 seeds plus the bump must be allowed: %v", err)
	}
}

// On/off-curve cases: the Solana Cookbook's "How to Validate a Public Key"
// pair (5oNDL3... on curve, 4BJXYk... off curve); the off-curve 32 bytes
// starting 00 79 f0 82 from solders' test_is_on_curve (also in
// solana_kit_addresses' Dart tests); and RFC 8032 section 7.1 test 1's
// public key, which is a valid Ed25519 point by construction.
func TestIsOnCurveKnown(t *testing.T) {
	on := []string{"5oNDL3swdJJF1g9DzJiZ4ynHXgszjAEpUkxVYejchzrY"}
	off := []string{"4BJXYkfvg37zEmBbsacZjeQDpTNx91KppxFJxRqrz48e"}
	for _, s := range on {
		if !isOnCurve(mustKey(t, s)) {
			t.Errorf("%s should be on the curve", s)
		}
	}
	for _, s := range off {
		if isOnCurve(mustKey(t, s)) {
			t.Errorf("%s should be off the curve", s)
		}
	}
	solders := [32]byte{0, 121, 240, 130, 166, 28, 199, 78, 165, 226, 171, 237, 100, 187,
		247, 95, 50, 251, 221, 83, 122, 255, 247, 82, 87, 237, 103, 22, 201, 227, 114, 153}
	if isOnCurve(solders) {
		t.Error("solders' off-curve vector reported on curve")
	}
	rfc, _ := hex.DecodeString("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	var k [32]byte
	copy(k[:], rfc)
	if !isOnCurve(k) {
		t.Error("RFC 8032 test 1 public key reported off curve")
	}
	// Any freshly generated Ed25519 key is on the curve.
	pub, _, _ := ed25519.GenerateKey(nil)
	copy(k[:], pub)
	if !isOnCurve(k) {
		t.Error("generated public key reported off curve")
	}
}
