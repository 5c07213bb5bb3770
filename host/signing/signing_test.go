package signing

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/assay-audit/assay/sdk"
)

func TestKeyringIsCreatedPrivateAndSigns(t *testing.T) {
	dir := t.TempDir()
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("keyring mode %v, want 0600", st.Mode().Perm())
	}
	signed, err := k.Sign(map[string]any{"b": 1, "a": "é", "n": []any{true, nil}})
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(k.JWKS())
	kid, err := Verify(signed, jwks)
	if err != nil || kid != k.ActiveID() {
		t.Fatalf("verify: %v %s", err, kid)
	}
	// canonical: members sorted, no whitespace
	var m map[string]json.RawMessage
	_ = json.Unmarshal(signed, &m)
	delete(m, "signature")
	payload, _ := Canonical(m)
	if string(payload) != `{"a":"é","b":1,"n":[true,null]}` {
		t.Errorf("canonical %s", payload)
	}
}

func TestTamperedAnswerFails(t *testing.T) {
	k, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	signed, _ := k.Sign(map[string]any{"count": 3})
	jwks, _ := json.Marshal(k.JWKS())
	var m map[string]any
	_ = json.Unmarshal(signed, &m)
	m["count"] = 4
	tampered, _ := json.Marshal(m)
	if _, err := Verify(tampered, jwks); !errors.Is(err, ErrBadSig) {
		t.Errorf("tampered answer: %v", err)
	}
	if _, err := Verify(signed, []byte(`{"keys":[]}`)); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestRotateKeepsOldKeysVerifiable(t *testing.T) {
	dir := t.TempDir()
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := k.ActiveID()
	oldAnswer, _ := k.Sign(map[string]any{"x": 1})
	kid, err := k.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if kid == old || k.ActiveID() != kid {
		t.Fatalf("rotate did not activate a new key")
	}
	// a second process sees the same keyring
	again, err := Open(dir)
	if err != nil || again.ActiveID() != kid || len(again.JWKS().Keys) != 2 {
		t.Fatalf("reopen: %v", err)
	}
	jwks, _ := json.Marshal(again.JWKS())
	if got, err := Verify(oldAnswer, jwks); err != nil || got != old {
		t.Errorf("old answer: %v", err)
	}
	if again.JWKS().Keys[0].Kid != kid {
		t.Error("active key is listed first")
	}
}

func TestThumbprintRFC7638(t *testing.T) {
	// RFC 8037 appendix A.3: the thumbprint of its example Ed25519 key.
	x := "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	pub, _ := b64url.DecodeString(x)
	if got := Thumbprint(ed25519.PublicKey(pub)); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Errorf("thumbprint %s", got)
	}
}

func TestCanonicalRFC8785(t *testing.T) {
	// RFC 8785 §3.2.3: members sorted by UTF-16 code units (the emoji's
	// surrogate pair sorts before U+FB33).
	in := []byte(`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`)
	tree, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Canonical(tree)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// ECMAScript number forms (RFC 8785 appendix B and §3.2.2.3)
	numbers := map[string]string{
		"1e30": "1e+30", "4.50": "4.5", "2e-3": "0.002", "0.000001": "0.000001", "1e-7": "1e-7",
		"1e21": "1e+21", "123e18": "123000000000000000000", "-0": "0", "-0.0": "0", "333333333.33333329": "333333333.3333333",
		"9007199254740993": "9007199254740992", "17": "17", "-17": "-17", "1.5e300": "1.5e+300",
	}
	for lit, want := range numbers {
		got, err := Canonical(json.Number(lit))
		if err != nil || string(got) != want {
			t.Errorf("%s -> %s (%v), want %s", lit, got, err, want)
		}
	}
	esc, _ := Canonical("a\"\\\b\f\n\r\t\x01\x1f\u007f<>&\u2028")
	if string(esc) != "\"a\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\u007f<>&\u2028\"" {
		t.Errorf("escapes %s", esc)
	}
}

// A member given as canonical bytes signs exactly as the same member
// given as a decoded tree: the host signs a family's report from the
// bytes it sent, and a verifier that decodes and re-encodes agrees.
func TestRawCanonicalMembersSignAsTrees(t *testing.T) {
	k, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"factors":[{"id":"F-1","n":3,"reason":"a\nb","share":"est:~1.50%"}],"line":"X · FULL — t","big":1e21,"\u00e9":null}`)
	doc, err := sdk.Canonicalize(body)
	if err != nil {
		t.Fatal(err)
	}
	members, _ := sdk.TopLevel(doc)
	raw, tree := map[string]any{"kind": "report"}, map[string]any{"kind": "report"}
	decoded, _ := Decode(body)
	for _, m := range members {
		raw[m.Name] = sdk.RawCanonical(doc[m.Start:m.End])
		tree[m.Name] = decoded.(map[string]any)[m.Name]
	}
	a, errA := k.Sign(raw)
	b, errB := k.Sign(tree)
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Fatalf("raw members sign as %s (%v), trees as %s (%v)", a, errA, b, errB)
	}
	jwks, _ := json.Marshal(k.JWKS())
	if _, err := Verify(a, jwks); err != nil {
		t.Fatal(err)
	}
}
