package selfcheck

import (
	"fmt"
	"slices"
	"strings"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// verdictWords is the host's baseline (VerdictWords), in lower case.
var verdictWords = []string{
	// a figure or a rank standing for the evidence
	"score", "scored", "scores",
	"grade", "graded", "grades",
	"rating", "ratings", "rated",
	"verdict", "verdicts",
	// an outcome
	"pass", "passed", "passes",
	"fail", "failed", "fails",
	// a vouching
	"certified", "certify", "verified",
	"compliant", "trustworthy",
	// a quality
	"healthy", "unhealthy",
	"good", "bad", "excellent", "poor",
	"safe", "unsafe",
}

// VerdictWords is the host's baseline of verdict words: words that pass
// judgement on what was submitted (a score, a pass, a quality, a
// certification) where an answer states measurements. Every answer of
// every family is checked against them in addition to the family's own
// ForbiddenPhrases, by the same rule: case aside, at ASCII word
// boundaries (score matches "Score:" and "a score." but not "scores_seen"
// or "underscore"), never inside a string equal to one of the family's
// ExemptSentences or beneath one of its ExemptMembers. The list carries
// each inflection it forbids, because a word-boundary match of "score"
// does not match "scores".
//
// A family whose criteria require one of these words in an answer, not as
// a judgement (a caller's "pass" status counted as written, a stated
// "failed" event), waives it in Tripwires.VerdictWaivers with the reason,
// and states the same word and reason in its criteria's ANNEX. A waiver
// lifts the word from the baseline only: a word the family lists in its
// own ForbiddenPhrases stays forbidden. A host refuses, at launch, a
// description whose waiver names a word not on this list (spelt as here,
// in lower case) or gives no reason (hostcheck.Description).
//
// It returns a copy: changing it changes nothing a Checker does.
func VerdictWords() []string { return slices.Clone(verdictWords) }

// IsVerdictWord reports whether word is on the baseline, spelt as the
// baseline spells it (lower case).
func IsVerdictWord(word string) bool { return slices.Contains(verdictWords, word) }

// WaiverProblems lists what a host refuses in a description's verdict
// waivers (empty when nothing): a word not on the baseline, or no reason.
// Each names the waiver by its position and its word, a published word of
// the family's description, never submitted content.
func WaiverProblems(t *pb.Tripwires) []string {
	var out []string
	for i, w := range t.GetVerdictWaivers() {
		switch {
		case !IsVerdictWord(w.GetWord()):
			out = append(out, fmt.Sprintf("tripwires: verdict waiver %d waives %q, which is not a word of the host's baseline of verdict words (selfcheck.VerdictWords, lower case)",
				i+1, w.GetWord()))
		case strings.TrimSpace(w.GetReason()) == "":
			out = append(out, fmt.Sprintf("tripwires: verdict waiver %d waives %q with no reason (the reason is the one the criteria's ANNEX states)",
				i+1, w.GetWord()))
		}
	}
	return out
}

// Phrases is what the self-check forbids as wording in t's answers: the
// family's own ForbiddenPhrases, then the baseline's words it does not
// waive (the canary plants the first of them).
func Phrases(t *pb.Tripwires) []string { return phrases(t) }

// phrases is what a Checker forbids as wording: the family's own
// ForbiddenPhrases, then the baseline's words the family does not waive,
// each once.
func phrases(t *pb.Tripwires) []string {
	waived := map[string]bool{}
	for _, w := range t.GetVerdictWaivers() {
		waived[w.GetWord()] = true
	}
	out := make([]string, 0, len(t.GetForbiddenPhrases())+len(verdictWords))
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range t.GetForbiddenPhrases() {
		add(p)
	}
	for _, w := range verdictWords {
		if !waived[w] {
			add(w)
		}
	}
	return out
}

// prefilter is the phrases the ASCII prefilter looks for, in lower case:
// a phrase that holds another as a substring is left out ("passed" holds
// "pass", "unsafe" holds "safe"), since a text holding it holds the other
// too. The prefilter is a necessary condition only; the expression
// decides.
func prefilter(folded []string) [][]byte {
	slices.Sort(folded)
	folded = slices.Compact(folded)
	var out [][]byte
	for _, p := range folded {
		covered := false
		for _, q := range folded {
			if q != p && strings.Contains(p, q) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, []byte(p))
		}
	}
	return out
}
