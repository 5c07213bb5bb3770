package sdk

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// The criteria's own tokens for a figure that cannot be stated. Each family
// uses the spelling its criteria document uses; none is ever replaced by 0.
const (
	NotAssessable       = "NOT-ASSESSABLE" // context-composition/v1
	NotAssessableSpaced = "NOT ASSESSABLE" // memory-scope-hygiene/v1
	NotComputable       = "NOT-COMPUTABLE" // settlement-evidence/v1
)

// NotStated is a figure that cannot be stated: the family's token with its
// reason. It marshals as {"value": token, "reason": reason}.
type NotStated struct {
	Token  string
	Reason string
}

// MarshalJSON renders the token and its reason.
func (n NotStated) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Value  string `json:"value"`
		Reason string `json:"reason"`
	}{n.Token, n.Reason})
}

// Estimate prints an EM-1 token estimate: "est:~N".
func Estimate(n int64) string {
	return "est:~" + strconv.FormatInt(n, 10)
}

// EstimatePercent prints 100 × part / total as "est:~N.NN%", rounded exactly
// (half away from zero) from the unrounded integers. ok is false when total
// is zero: the caller prints its NOT-ASSESSABLE token, never 0 %.
func EstimatePercent(part, total int64) (s string, ok bool) {
	if total == 0 {
		return "", false
	}
	return "est:~" + Ratio(big.NewInt(100*part), big.NewInt(total), 2) + "%", true
}

// Percent prints 100 × part / total with the given decimals and a "%" sign,
// rounded exactly. ok is false when total is zero.
func Percent(part, total int64, decimals int) (s string, ok bool) {
	if total == 0 {
		return "", false
	}
	return Ratio(big.NewInt(100*part), big.NewInt(total), decimals) + "%", true
}

// Ratio prints num / den rounded to decimals places, half away from zero,
// with exact integer arithmetic: no binary floating point anywhere, so Go
// and the corpus generator agree on every tie (6.25 -> "6.3" at one place).
// den must not be zero.
func Ratio(num, den *big.Int, decimals int) string {
	n := new(big.Int).Set(num)
	d := new(big.Int).Set(den)
	if d.Sign() < 0 {
		n.Neg(n)
		d.Neg(d)
	}
	neg := n.Sign() < 0
	n.Abs(n)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)
	n.Mul(n, scale)
	// round(n/d) half up on magnitudes: floor((2n + d) / 2d)
	q := new(big.Int).Mul(n, big.NewInt(2))
	q.Add(q, d)
	q.Quo(q, new(big.Int).Mul(d, big.NewInt(2)))
	digits := q.String()
	if decimals > 0 {
		if len(digits) <= decimals {
			digits = strings.Repeat("0", decimals-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-decimals] + "." + digits[len(digits)-decimals:]
	}
	if neg && q.Sign() != 0 {
		digits = "-" + digits
	}
	return digits
}

// InstantLayout is how every printed instant looks: RFC 3339, UTC, whole
// seconds, "Z".
const InstantLayout = "2006-01-02T15:04:05Z"

// Instant prints t in InstantLayout, truncated to the second.
func Instant(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(InstantLayout)
}

// FoldASCII folds ASCII letters to lowercase and leaves every other byte
// as it is. The host matches an answer's member names against a family's
// forbidden names this way ("Score" is a score), never through Unicode
// case mappings, which turn other letters into ASCII ones (U+0130
// lowercases to "i") and would make the rule hard to follow exactly; a
// family that must keep a name out of its answers folds with it too.
func FoldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
