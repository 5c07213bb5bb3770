package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/x402"
)

// assay call's word on a paid request that got no report follows the
// host's answer: "nothing was charged" (exit 4) when the host says so,
// "taken" when it says that, and "may have been taken" (exit 5) only
// when no answer of the host's says either; never two of them at once.
func TestUnansweredSaysOneThingOfThePayment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.json")
	answer := func(charged string) *x402.Paid {
		body := `{"error":{"code":"plugin_unavailable","message":"m"},"payment":{"mode":"x402","examined":true,"charged":` + charged + `}}`
		return &x402.Paid{Status: http.StatusServiceUnavailable, Body: []byte(body), Payment: "eyJwYXltZW50IjoxfQ"}
	}
	for _, c := range []struct {
		res    *x402.Paid
		status int
		says   string
	}{
		{answer("false"), callNotPaid, "the host says nothing was charged and the payment is still good"},
		{answer("true"), callOwed, "the host says the payment was taken"},
		{&x402.Paid{Payment: "eyJwYXltZW50IjoxfQ"}, callOwed, "the payment may have been taken"},
	} {
		err := unanswered(c.res, nil, out, "")
		msg := err.Error()
		n := strings.Count(msg, "nothing was charged") + strings.Count(msg, "was taken") + strings.Count(msg, "may have been taken")
		if exitStatus(err) != c.status || !strings.Contains(msg, c.says) || n != 1 {
			t.Errorf("exit %d, %q; want %d, %q once", exitStatus(err), msg, c.status, c.says)
		}
	}
}
