package redelivery_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/redelivery"
)

func sealer(t *testing.T, secret string) *redelivery.Sealer {
	t.Helper()
	s, err := redelivery.New([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A kept answer opens for the payment, identifier and submission it was
// sealed for, and for nothing else: another submission, another
// identifier (or none), another payment, another host's secret.
func TestAnAnswerOpensOnlyForItsOwnRequest(t *testing.T) {
	s := sealer(t, strings.Repeat("k", 32))
	body := []byte(`{"streamed_capture":{"chunks":["aGk="]}}`)
	ans := redelivery.Answer{Header: map[string]string{"PAYMENT-RESPONSE": "eyJ9"}, Body: []byte(`{"signature":"x"}`)}
	sealed, err := s.Seal("pay1", "pay_0123456789abcdef", redelivery.DigestOf(body), ans)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Open("pay1", "pay_0123456789abcdef", redelivery.DigestOf(bytes.Clone(body)), sealed)
	if err != nil || !bytes.Equal(got.Body, ans.Body) || got.Header["PAYMENT-RESPONSE"] != "eyJ9" {
		t.Fatalf("own request: %+v %v", got, err)
	}
	other := sealer(t, strings.Repeat("j", 32))
	for name, open := range map[string]func() error{
		"another submission": func() error {
			_, err := s.Open("pay1", "pay_0123456789abcdef", redelivery.DigestOf([]byte(`{}`)), sealed)
			return err
		},
		"no identifier": func() error {
			_, err := s.Open("pay1", "", redelivery.DigestOf(body), sealed)
			return err
		},
		"another payment": func() error {
			_, err := s.Open("pay2", "pay_0123456789abcdef", redelivery.DigestOf(body), sealed)
			return err
		},
		"another secret": func() error {
			_, err := other.Open("pay1", "pay_0123456789abcdef", redelivery.DigestOf(body), sealed)
			return err
		},
		"damaged": func() error {
			_, err := s.Open("pay1", "pay_0123456789abcdef", redelivery.DigestOf(body), "AAAA"+sealed[4:])
			return err
		},
	} {
		if err := open(); !errors.Is(err, redelivery.ErrMismatch) {
			t.Errorf("%s: %v, want ErrMismatch", name, err)
		}
	}
	if s.KID() == other.KID() {
		t.Error("two secrets share a key id")
	}
}

// What the store keeps says nothing of the submission: the sealed bytes
// hold neither the body, nor its digest, nor the identifier.
func TestTheStoredFormsCarryNoSubmission(t *testing.T) {
	s := sealer(t, strings.Repeat("k", 32))
	body := []byte(`CANARY-4f1e2d`)
	d := redelivery.DigestOf(body)
	sealed, err := s.Seal("pay1", "pay_secretidentifier01", d, redelivery.Answer{Body: []byte(`CANARY-4f1e2d report`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, stored := range []string{sealed} {
		for _, secret := range []string{"CANARY", "pay_secretidentifier01", string(d[:])} {
			if strings.Contains(stored, secret) {
				t.Errorf("a stored form holds %q", secret)
			}
		}
	}
}

// A data dir's secret is made once (0600) and read back: answers sealed
// before a restart open after it.
func TestTheDataDirSecretSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	a, err := redelivery.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, redelivery.FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", fi, err)
	}
	sealed, err := a.Seal("p", "", redelivery.DigestOf([]byte("b")), redelivery.Answer{Body: []byte("r")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := redelivery.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open("p", "", redelivery.DigestOf([]byte("b")), sealed); err != nil || string(got.Body) != "r" {
		t.Fatalf("after a restart: %v %v", got, err)
	}
	if _, err := redelivery.New([]byte("short")); !errors.Is(err, redelivery.ErrSecret) {
		t.Errorf("a short secret: %v", err)
	}
}
