package server

import (
	"strings"
	"testing"
)

// A refusal's message agrees with its payment member: a payment the
// answer says was taken is never "nothing was charged"; one not taken
// keeps the message as it is.
func TestPayerMessageAgreesWithThePayment(t *testing.T) {
	for _, code := range []string{codeUnavailable, codeDeadline, codeInternal, codeAdapterFault, codeBusy} {
		taken := payerMessage(code, map[string]any{"mode": "x402", "examined": true, "charged": true})
		if strings.Contains(taken, "nothing was charged") || !strings.Contains(taken, "the payment was taken, once") {
			t.Errorf("%s, charged: %q", code, taken)
		}
		if got := payerMessage(code, map[string]any{"charged": false}); got != hostMessages[code] || !strings.Contains(got, "nothing was charged") {
			t.Errorf("%s, not charged: %q", code, got)
		}
		if got := payerMessage(code, nil); got != hostMessages[code] {
			t.Errorf("%s, a free route: %q", code, got)
		}
	}
}
