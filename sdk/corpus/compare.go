package corpus

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/assay-audit/assay/sdk"
)

// Placeholders an expected answer carries (docs/corpus.md).
const (
	CheckEnd    = "<check-end UTC>"
	PinMark     = "<pin>"
	ServerClock = "<server clock>"
)

var instantRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)

// Answer is what came back for a case: the status, the bytes, and when
// the request left and its answer arrived (for <server clock>).
type Answer struct {
	Status         int
	Body           []byte
	Sent, Received time.Time
}

// Compare is the first way an answer differs from the case's expectation,
// "" when it holds: the status (naming the refusal code, the answer's
// kind or the self-check's rule when it is wrong), then body_text, or,
// for a JSON answer, issued_at's form, the corpus pin, the server's clock
// where the case prints it, and deep equality with the expected answer,
// placeholders substituted (member order ignored, array order kept,
// numbers by value, no missing and no extra members). The answer's
// signature and build members are not compared; checking it is the caller's (a host
// verifies it against its keys first). Messages hold paths and the
// corpus's own values only: a corpus is synthetic, never a submission.
func Compare(tc Case, pin string, a Answer) string {
	if a.Status != tc.Expect.Status {
		return fmt.Sprintf("status: expected %d, actual %d%s", tc.Expect.Status, a.Status, refusalOf(a.Body))
	}
	if tc.Expect.BodyText != nil {
		if string(a.Body) != *tc.Expect.BodyText {
			return "body_text differs"
		}
		return ""
	}
	tree, err := sdk.DecodeJSON(a.Body)
	if err != nil {
		return "answer: not JSON"
	}
	answer, ok := tree.(map[string]any)
	if !ok {
		return "answer: not an object"
	}
	delete(answer, "signature")
	// the host's build member names its plugin binaries, not the criteria's
	// measurement: no corpus expects it
	delete(answer, "build")
	issued, _ := answer["issued_at"].(string)
	if !instantRE.MatchString(issued) {
		return "$.issued_at: not YYYY-MM-DDTHH:MM:SSZ"
	}
	if cp, _ := answer["corpus"].(map[string]any); cp == nil || cp["sha256"] != pin {
		return "$.corpus.sha256: not the corpus pin"
	}
	if ft, ok := answer["free_tier"]; ok && strings.HasSuffix(tc.Request.Path, "/precheck") {
		if msg := freeTier(ft, issued); msg != "" {
			return msg
		}
		delete(answer, "free_tier")
	}
	if si, ok := answer["sign_in"]; ok && strings.HasSuffix(tc.Request.Path, "/precheck") {
		if msg := signIn(si); msg != "" {
			return msg
		}
		delete(answer, "sign_in")
	}
	exp, err := sdk.DecodeJSON(tc.Expect.Answer)
	if err != nil {
		return "expected answer is not JSON"
	}
	clock := ""
	if carries(exp, ServerClock) {
		v, _ := answer["evaluation_instant"].(string)
		at, err := time.Parse(time.RFC3339, v)
		if !instantRE.MatchString(v) || err != nil || at.Before(a.Sent.Truncate(time.Second)) || at.After(a.Received) {
			return "$.evaluation_instant: not the host's clock during the request"
		}
		clock = v
	}
	return Diff(substitute(exp, issued, pin, clock), answer, "$")
}

// freeTier checks a pre-check answer's free_tier member, the host's
// count of the caller's free allowance (not the criteria's measurement,
// so no corpus expects it): per_day at least 1, remaining 0 to per_day,
// resets_at the 00:00:00Z instant after issued_at, and
// min_interval_ms 0 or more; and, from hosts that prove callers' wallets
// (sign-in-with-x), counted: "wallet" or "address", whose allowance it
// is. A host without it is still read (it predates the member). "" when
// it holds.
func freeTier(v any, issued string) string {
	ft, ok := v.(map[string]any)
	members := 4
	if c, has := ft["counted"]; has {
		if c != "wallet" && c != "address" {
			return "$.free_tier.counted: not \"wallet\" or \"address\""
		}
		members = 5
	}
	if !ok || len(ft) != members {
		return "$.free_tier: not an object of per_day, remaining, resets_at, min_interval_ms and (optional) counted"
	}
	num := func(k string) (int64, bool) {
		n, ok := ft[k].(json.Number)
		if !ok {
			return 0, false
		}
		i, err := n.Int64()
		return i, err == nil
	}
	perDay, ok1 := num("per_day")
	remaining, ok2 := num("remaining")
	interval, ok3 := num("min_interval_ms")
	if !ok1 || !ok2 || !ok3 || perDay < 1 || remaining < 0 || remaining > perDay || interval < 0 {
		return "$.free_tier: per_day, remaining or min_interval_ms out of range"
	}
	at, _ := time.Parse(time.RFC3339, issued)
	s, _ := ft["resets_at"].(string)
	resets, err := time.Parse(time.RFC3339, s)
	if err != nil || !instantRE.MatchString(s) || !resets.Equal(resets.Truncate(24*time.Hour)) || resets.Before(at.Add(-time.Minute)) || resets.Sub(at) > 24*time.Hour {
		// a minute's leeway: the allowance is counted before the family's
		// check ends, which can fall across midnight
		return "$.free_tier.resets_at: not the 00:00 UTC after issued_at"
	}
	return ""
}

// signIn checks a pre-check answer's sign_in member, the host's sign-in
// challenge for the caller's next pre-check (x402's sign-in-with-x
// extension object; fresh in every answer, so no corpus expects it): an
// object with an info object and a supportedChains array. "" when it
// holds.
func signIn(v any) string {
	si, ok := v.(map[string]any)
	if !ok {
		return "$.sign_in: not an object"
	}
	info, _ := si["info"].(map[string]any)
	chains, _ := si["supportedChains"].([]any)
	if info == nil || len(chains) == 0 {
		return "$.sign_in: not a sign-in-with-x challenge (info, supportedChains)"
	}
	return ""
}

// refusalOf names what an answer of the wrong status said: its kind, or
// its error's code and (from a host that explains withheld answers: its
// own self-test, familytest) the self-check's rule.
func refusalOf(raw []byte) string {
	var a struct {
		Kind  string `json:"kind"`
		Error struct {
			Code, Rule string
		} `json:"error"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return " (not a JSON answer)"
	}
	switch {
	case a.Error.Rule != "":
		return fmt.Sprintf(" (%s: rule %s)", a.Error.Code, a.Error.Rule)
	case a.Error.Code != "":
		return fmt.Sprintf(" (%s)", a.Error.Code)
	case a.Kind != "":
		return fmt.Sprintf(" (kind %s)", a.Kind)
	}
	return ""
}

func carries(v any, mark string) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, mark)
	case []any:
		for _, x := range t {
			if carries(x, mark) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if carries(x, mark) {
				return true
			}
		}
	}
	return false
}

func substitute(v any, issued, pin, clock string) any {
	switch t := v.(type) {
	case string:
		if t == PinMark {
			return pin
		}
		s := strings.ReplaceAll(t, CheckEnd, issued)
		if clock != "" {
			s = strings.ReplaceAll(s, ServerClock, clock)
		}
		return s
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = substitute(x, issued, pin, clock)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = substitute(x, issued, pin, clock)
		}
		return out
	}
	return v
}

// Diff is the first difference between expected and actual JSON trees
// (as sdk.DecodeJSON gives them), "" when equal: member order ignored,
// array order kept, numbers by value. path names the root ("$").
func Diff(exp, act any, path string) string {
	switch e := exp.(type) {
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			return path + ": not an object"
		}
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			av, ok := a[k]
			if !ok {
				return path + "." + k + ": missing member"
			}
			if d := Diff(e[k], av, path+"."+k); d != "" {
				return d
			}
		}
		for k := range a {
			if _, ok := e[k]; !ok {
				return path + "." + k + ": unexpected member"
			}
		}
		return ""
	case []any:
		a, ok := act.([]any)
		if !ok {
			return path + ": not an array"
		}
		for i := 0; i < len(e) && i < len(a); i++ {
			if d := Diff(e[i], a[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		if len(e) != len(a) {
			return fmt.Sprintf("%s: expected %d items, actual %d", path, len(e), len(a))
		}
		return ""
	case json.Number:
		a, ok := act.(json.Number)
		if !ok || !sameNumber(e, a) {
			return path + ": number differs: " + expectedActual(exp, act)
		}
		return ""
	}
	if exp != act {
		return path + ": value differs: " + expectedActual(exp, act)
	}
	return ""
}

// expectedActual names both values of a difference, each as JSON and cut
// to a line: a corpus is synthetic and so is the answer to it, so both
// may be printed (an author fixes the family or the generator from them).
func expectedActual(exp, act any) string {
	return "expected " + shown(exp) + ", actual " + shown(act)
}

func shown(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "(not JSON)"
	}
	if r := []rune(string(raw)); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return string(raw)
}

func sameNumber(a, b json.Number) bool {
	x, _, errX := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, errY := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	return errX == nil && errY == nil && x.Cmp(y) == 0
}
