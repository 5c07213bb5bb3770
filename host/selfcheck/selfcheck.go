// Package selfcheck is the host's last look at an answer before it is
// settled or signed: the family's declared tripwires, applied to the whole
// JSON answer. A failing answer is never issued.
package selfcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrTripped is wrapped by every failure; the text says which rule, never
// which value.
var ErrTripped = errors.New("answer failed the pre-signing self-check")

// Checker applies one family's tripwires.
type Checker struct {
	phrases *regexp.Regexp
	exempt  map[string]bool
	members map[string]bool
	labels  map[string]bool
	absent  []string
	t       *pb.Tripwires
}

// New compiles a family's tripwires.
func New(t *pb.Tripwires) *Checker {
	c := &Checker{exempt: map[string]bool{}, members: map[string]bool{}, labels: map[string]bool{}, t: t}
	if t == nil {
		c.t = &pb.Tripwires{}
		return c
	}
	if len(t.GetForbiddenPhrases()) > 0 {
		quoted := make([]string, len(t.GetForbiddenPhrases()))
		for i, p := range t.GetForbiddenPhrases() {
			quoted[i] = regexp.QuoteMeta(p)
		}
		c.phrases = regexp.MustCompile(`(?i)\b(` + strings.Join(quoted, "|") + `)\b`)
	}
	for _, s := range t.GetExemptSentences() {
		c.exempt[s] = true
	}
	for _, m := range t.GetForbiddenMembers() {
		c.members[strings.ToLower(m)] = true
	}
	for _, m := range t.GetExemptMembers() {
		c.labels[m] = true
	}
	c.absent = t.GetAbsentTokens()
	return c
}

// Check walks a decoded JSON answer.
func (c *Checker) Check(answer any) error {
	if err := c.walk(answer, false); err != nil {
		return err
	}
	return c.limited(answer)
}

// limited: a headline that hides an absent factor (or claims one that is
// not there) is the criteria's canonical wrong report.
func (c *Checker) limited(answer any) error {
	r := c.t.GetLimited()
	top, ok := answer.(map[string]any)
	if r == nil || !ok {
		return nil
	}
	line, ok := top[r.GetLine()].(string)
	if !ok {
		return nil // not a report (a refusal, a pre-check)
	}
	absent := false
	factors, _ := top[r.GetFactors()].([]any)
	for _, f := range factors {
		m, _ := f.(map[string]any)
		id, _ := m[r.GetIdMember()].(string)
		st, _ := m[r.GetStatusMember()].(string)
		if slices.Contains(c.absent, st) && !slices.Contains(r.GetExemptIds(), id) {
			absent = true
		}
	}
	says := strings.Contains(line, r.GetLimitedWord())
	full := strings.Contains(line, r.GetFullWord())
	if absent != says || absent == full {
		return fmt.Errorf("%w: headline disagrees with the factors' assessability", ErrTripped)
	}
	return nil
}

func hasName(name string, names, suffixes []string) bool {
	if slices.Contains(names, name) {
		return true
	}
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// typography: exact figures are numbers, estimates are est:~ strings (or a
// stated absence); the criteria make the swap a stop-serving tripwire.
func (c *Checker) typography(name string, v any) error {
	if hasName(name, c.t.GetCountNames(), c.t.GetCountSuffixes()) {
		switch v.(type) {
		case float64, int, int64, json.Number:
		default:
			return fmt.Errorf("%w: a count that is not a number", ErrTripped)
		}
	}
	if hasName(name, c.t.GetEstimateNames(), c.t.GetEstimateSuffixes()) {
		switch x := v.(type) {
		case string:
			if !isEstimate(x) {
				return fmt.Errorf("%w: an estimate without estimate typography", ErrTripped)
			}
		case map[string]any:
			if st, _ := x["value"].(string); !slices.Contains(c.absent, st) {
				return fmt.Errorf("%w: an estimate without estimate typography", ErrTripped)
			}
		default:
			return fmt.Errorf("%w: an estimate without estimate typography", ErrTripped)
		}
	}
	return nil
}

// walk checks v; label is true beneath a member the family declared as
// carrying submitted labels (its strings, at any depth, are exempt from the
// wording rules, never from the member-name rules).
func (c *Checker) walk(v any, label bool) error {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if c.members[strings.ToLower(k)] {
				return fmt.Errorf("%w: forbidden member name", ErrTripped)
			}
			if err := c.typography(k, child); err != nil {
				return err
			}
			if err := c.walk(child, label || c.labels[k]); err != nil {
				return err
			}
		}
		return c.notZeroedToken(x)
	case []any:
		for _, child := range x {
			if err := c.walk(child, label); err != nil {
				return err
			}
		}
	case string:
		if c.exempt[x] || label {
			return nil
		}
		if strings.HasPrefix(x, "est:") {
			// an estimate holds no word: checking its shape is enough
			// (large reports carry tens of thousands of them)
			if !isEstimate(x) {
				return fmt.Errorf("%w: malformed estimate", ErrTripped)
			}
			return nil
		}
		if c.phrases != nil && c.phrases.MatchString(x) {
			return fmt.Errorf("%w: forbidden wording", ErrTripped)
		}
	}
	return nil
}

// notZeroedToken: an object that states a cannot-be-stated token must not
// also carry a number, and must give a reason.
func (c *Checker) notZeroedToken(m map[string]any) error {
	val, ok := m["value"].(string)
	if st := c.t.GetLimited().GetStatusMember(); !ok && st != "" {
		// a family whose factors carry their assessability in a status
		// member holds those objects to the same rule
		val, ok = m[st].(string)
	}
	if !ok {
		return nil
	}
	for _, tok := range c.absent {
		if val != tok {
			continue
		}
		if r, _ := m["reason"].(string); strings.TrimSpace(r) == "" {
			return fmt.Errorf("%w: %s without a reason", ErrTripped, tok)
		}
		for _, other := range m {
			switch other.(type) {
			case float64, int, int64, json.Number:
				return fmt.Errorf("%w: %s beside a number", ErrTripped, tok)
			}
		}
	}
	return nil
}

// isEstimate is the estimate typography: est:~N or est:~N.NN% (the regexp
// ^est:~[0-9]+(\.[0-9]{2}%)?$, written out: it runs on every estimate).
func isEstimate(s string) bool {
	rest, ok := strings.CutPrefix(s, "est:~")
	if !ok {
		return false
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return false
	}
	tail := rest[digits:]
	return tail == "" || len(tail) == 4 && tail[0] == '.' && tail[1] >= '0' && tail[1] <= '9' && tail[2] >= '0' && tail[2] <= '9' && tail[3] == '%'
}
