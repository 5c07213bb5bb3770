package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
		return &x402.Paid{Status: http.StatusServiceUnavailable, Body: []byte(body), Payment: "eyJwYXltZW50IjoxfQ", Reached: true}
	}
	for _, c := range []struct {
		res    *x402.Paid
		status int
		says   string
	}{
		{answer("false"), callNotPaid, "the host says nothing was charged: call again"},
		{answer("true"), callOwed, "the host says the payment was taken"},
		{&x402.Paid{Payment: "eyJwYXltZW50IjoxfQ", Reached: true}, callOwed, "the payment may have been taken"},
	} {
		err := unanswered(c.res, nil, out, "")
		msg := err.Error()
		n := strings.Count(msg, "nothing was charged") + strings.Count(msg, "was taken") + strings.Count(msg, "may have been taken")
		if exitStatus(err) != c.status || !strings.Contains(msg, c.says) || n != 1 {
			t.Errorf("exit %d, %q; want %d, %q once", exitStatus(err), msg, c.status, c.says)
		}
	}
}

// An uncharged exit leaves no payment file (a leftover one would refuse
// the next call with the same --out), and a payment whose connection was
// never made is not "may have been taken": nothing reached the host.
func TestAnUnchargedExitLeavesNoPaymentFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.json")
	body := `{"error":{"code":"plugin_unavailable","message":"m"},"payment":{"mode":"x402","examined":true,"charged":false}}`
	said := &x402.Paid{Status: http.StatusServiceUnavailable, Body: []byte(body), Payment: "eyJwYXltZW50IjoxfQ", Reached: true}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		what string
		res  *x402.Paid
		err  error
	}{
		{"the host says nothing was charged", said, nil},
		{"the connection was refused", &x402.Paid{Payment: "eyJwYXltZW50IjoxfQ"}, fmt.Errorf("x402: send the payment: %w", refused)},
	} {
		err := unanswered(c.res, c.err, out, "")
		if exitStatus(err) != callNotPaid || strings.Contains(err.Error(), "may have been taken") || !strings.Contains(err.Error(), "charged nothing") && !strings.Contains(err.Error(), "nothing was charged") {
			t.Errorf("%s: exit %d, %v", c.what, exitStatus(err), err)
		}
		if _, serr := os.Stat(out + ".payment"); serr == nil {
			t.Errorf("%s: a payment file was left", c.what)
		}
	}
}
