// Package selfcheck is the host's last look at an answer before it is
// settled or signed: the family's declared tripwires, applied to the whole
// JSON answer. A failing answer is never issued.
package selfcheck

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unsafe"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrTripped is wrapped by every failure; the text says which rule, never
// which value.
var ErrTripped = errors.New("answer failed the pre-signing self-check")

// Checker applies one family's tripwires.
type Checker struct {
	// phrases matches the family's forbidden phrases and the baseline's
	// verdict words it does not waive (phrases in verdict.go)
	phrases *regexp.Regexp
	// folded is them in ASCII lower case when every one is ASCII (nil
	// otherwise), less those holding another (prefilter): an ASCII text
	// holding none of them as a substring, case aside, cannot match
	// phrases, so the regular expression runs only on the few texts that
	// might
	folded  [][]byte
	exempt  map[string]bool
	members map[string]bool
	labels  map[string]bool
	absent  []string
	t       *pb.Tripwires
}

// New compiles a family's tripwires, with the host's baseline of verdict
// words (VerdictWords) added to its ForbiddenPhrases, less the words its
// VerdictWaivers lift. A nil t is a family with no tripwires of its own:
// the baseline still applies.
func New(t *pb.Tripwires) *Checker {
	if t == nil {
		t = &pb.Tripwires{}
	}
	c := &Checker{exempt: map[string]bool{}, members: map[string]bool{}, labels: map[string]bool{}, t: t}
	if ps := phrases(t); len(ps) > 0 {
		quoted := make([]string, len(ps))
		folded := make([]string, 0, len(ps))
		ascii := true
		for i, p := range ps {
			quoted[i] = regexp.QuoteMeta(p)
			ascii = ascii && p != "" && sdk.IsASCII(p)
			folded = append(folded, strings.ToLower(p))
		}
		c.phrases = regexp.MustCompile(`(?i)\b(` + strings.Join(quoted, "|") + `)\b`)
		if ascii {
			c.folded = prefilter(folded)
		}
	}
	for _, s := range t.GetExemptSentences() {
		c.exempt[s] = true
	}
	for _, m := range t.GetForbiddenMembers() {
		c.members[sdk.FoldASCII(m)] = true
	}
	for _, m := range t.GetExemptMembers() {
		c.labels[m] = true
	}
	c.absent = t.GetAbsentTokens()
	return c
}

// errMalformed is an answer that is not one canonical JSON value: the
// host always canonicalizes first, so only a host bug reaches it, and an
// answer the check cannot read is withheld like one it rejects.
var errMalformed = fmt.Errorf("%w: not one canonical JSON value", ErrTripped)

// Check applies the tripwires to doc, one JSON answer in RFC 8785 form
// (sdk.Canonicalize gives it). It walks the bytes once and builds no
// tree: a 5 MiB record's report is hundreds of kilobytes of small values.
// It returns the answer's top-level members as the walk found them, so
// the caller need not scan for them again.
func (c *Checker) Check(doc []byte) ([]sdk.Member, error) {
	if !sdk.ValidJSON(doc) {
		return nil, errMalformed // the walk reads canonical JSON and trusts its grammar
	}
	w := walker{c: c, doc: doc, rule: c.t.GetLimited()}
	end, _, err := w.value(0, false)
	if err != nil {
		return nil, err
	}
	if end != len(doc) {
		return nil, errMalformed
	}
	return w.top, w.limited()
}

// limited: a headline that hides an absent factor (or claims one that is
// not there) is the criteria's canonical wrong report. The walk noted the
// headline and each factor's id and status.
func (w *walker) limited() error {
	r := w.rule
	if r == nil || !w.hasLine {
		return nil // not a report (a refusal, a pre-check)
	}
	absent := false
	for _, f := range w.factors {
		if f.hasStatus && slices.Contains(w.c.absent, f.status) && !slices.Contains(r.GetExemptIds(), f.id) {
			absent = true
		}
	}
	says := strings.Contains(w.line, r.GetLimitedWord())
	full := strings.Contains(w.line, r.GetFullWord())
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
func (c *Checker) typography(name string, v read) error {
	if hasName(name, c.t.GetCountNames(), c.t.GetCountSuffixes()) && !v.number() {
		return fmt.Errorf("%w: a count that is not a number", ErrTripped)
	}
	if hasName(name, c.t.GetEstimateNames(), c.t.GetEstimateSuffixes()) {
		switch v.kind {
		case '"':
			if !isEstimate(v.text) {
				return fmt.Errorf("%w: an estimate without estimate typography", ErrTripped)
			}
		case '{':
			if !v.facts.hasValue || !slices.Contains(c.absent, v.facts.value) {
				return fmt.Errorf("%w: an estimate without estimate typography", ErrTripped)
			}
		default:
			return fmt.Errorf("%w: an estimate without estimate typography", ErrTripped)
		}
	}
	return nil
}

// read is what the walk learnt of one value: its kind (its first byte),
// a string's text, an object's facts.
type read struct {
	kind  byte
	text  string
	facts facts
}

func (v read) number() bool { return v.kind == '-' || v.kind >= '0' && v.kind <= '9' }

func isNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// walker reads one canonical answer: no whitespace, and a string's
// escapes are the only thing that makes it differ from its bytes.
type walker struct {
	c     *Checker
	doc   []byte
	rule  *pb.LimitedRule
	depth int // objects entered
	// what the limited rule reads, noted on the way
	top       []sdk.Member
	line      string
	hasLine   bool
	inFactors bool
	factors   []facts
}

// value checks the value at doc[i] and returns the index after it; label
// is true beneath a member the family declared as carrying submitted
// labels (its strings, at any depth, are exempt from the wording rules,
// never from the member-name rules).
func (w *walker) value(i int, label bool) (int, read, error) {
	d := w.doc
	if i >= len(d) {
		return i, read{}, errMalformed
	}
	v := read{kind: d[i]}
	switch v.kind {
	case '{':
		end, f, err := w.object(i, label)
		v.facts = f
		return end, v, err
	case '[':
		i++
		if i < len(d) && d[i] == ']' {
			return i + 1, v, nil
		}
		// the elements of the top-level factors array are the factors
		factors := w.inFactors && w.depth == 1
		w.inFactors = false
		for {
			var err error
			var e read
			if i, e, err = w.value(i, label); err != nil {
				return i, v, err
			}
			if factors {
				w.factors = append(w.factors, e.facts)
			}
			switch {
			case i >= len(d):
				return i, v, errMalformed
			case d[i] == ']':
				return i + 1, v, nil
			case d[i] != ',':
				return i, v, errMalformed
			}
			i++
		}
	case '"':
		end, s, ok := w.text(i)
		if !ok {
			return i, v, errMalformed
		}
		v.text = s
		return end, v, w.c.wording(s, label)
	}
	// a number or a literal runs to the next delimiter
	j := i
	for j < len(d) && d[j] != ',' && d[j] != ']' && d[j] != '}' {
		j++
	}
	if j == i {
		return i, v, errMalformed
	}
	return j, v, nil
}

// facts are what the absent-token and limited rules need of one object.
type facts struct {
	value, status, reason, id string
	hasValue, hasStatus       bool
	number                    bool
}

func (w *walker) object(i int, label bool) (int, facts, error) {
	d := w.doc
	var f facts
	statusMember, idMember := w.rule.GetStatusMember(), w.rule.GetIdMember()
	w.depth++
	defer func() { w.depth-- }()
	i++
	if i < len(d) && d[i] == '}' {
		return i + 1, f, w.c.notZeroedToken(f)
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return i, f, errMalformed
		}
		end, name, ok := w.text(i)
		if !ok || end >= len(d) || d[end] != ':' {
			return i, f, errMalformed
		}
		if w.c.members[sdk.FoldASCII(name)] {
			return i, f, fmt.Errorf("%w: forbidden member name", ErrTripped)
		}
		start, top := end+1, w.depth == 1
		w.inFactors = top && w.rule != nil && name == w.rule.GetFactors()
		end, v, err := w.value(start, label || w.c.labels[name])
		if err != nil {
			return end, f, err
		}
		if top {
			w.top = append(w.top, sdk.Member{Name: strings.Clone(name), Start: start, End: end})
			if w.rule != nil && name == w.rule.GetLine() && v.kind == '"' {
				w.line, w.hasLine = v.text, true
			}
		}
		if err := w.c.typography(name, v); err != nil {
			return end, f, err
		}
		switch {
		case v.number():
			f.number = true
		case v.kind == '"' && name == "value":
			f.value, f.hasValue = v.text, true
		case v.kind == '"' && name == "reason":
			f.reason = v.text
		}
		if v.kind == '"' && statusMember != "" && name == statusMember {
			f.status, f.hasStatus = v.text, true
		}
		if v.kind == '"' && idMember != "" && name == idMember {
			f.id = v.text
		}
		switch i = end; {
		case i >= len(d):
			return i, f, errMalformed
		case d[i] == '}':
			return i + 1, f, w.c.notZeroedToken(f)
		case d[i] != ',':
			return i, f, errMalformed
		}
		i++
	}
}

// text decodes the string at doc[i] and returns the index after it. A
// string with no escape is its own bytes, read in place (it lives only as
// long as the check).
func (w *walker) text(i int) (end int, s string, ok bool) {
	d := w.doc
	// q is the next quote at or after j, searched for again only once an
	// escape has consumed it: a string of n escapes costs n steps, where
	// searching afresh after each escape re-read the rest of the string
	// every time (a 262 KB string of \n took 152 ms)
	j, q, esc := i+1, -1, false
	for {
		if q < j {
			k := bytes.IndexByte(d[j:], '"')
			if k < 0 {
				return len(d), "", false
			}
			q = j + k
		}
		b := bytes.IndexByte(d[j:q], '\\')
		if b < 0 {
			j = q
			break
		}
		esc, j = true, j+b+2 // past the escape and the byte it escapes
	}
	if !esc {
		return j + 1, unsafe.String(unsafe.SliceData(d[i+1:j]), j-i-1), true
	}
	s, ok = sdk.StringOf(d[i : j+1])
	return j + 1, s, ok
}

// wording checks one string value.
func (c *Checker) wording(s string, label bool) error {
	if c.exempt[s] || label {
		return nil
	}
	if strings.HasPrefix(s, "est:") {
		// an estimate holds no word: checking its shape is enough
		// (large reports carry tens of thousands of them)
		if !isEstimate(s) {
			return fmt.Errorf("%w: malformed estimate", ErrTripped)
		}
		return nil
	}
	if c.phrases != nil && c.mayHavePhrase(s) && c.phrases.MatchString(s) {
		return fmt.Errorf("%w: forbidden wording", ErrTripped)
	}
	return nil
}

// mayHavePhrase is false only when s is ASCII and holds no phrase as a
// substring, ASCII case aside: then the case-insensitive expression
// cannot match (in ASCII text, Unicode case folding is ASCII's: the
// Kelvin sign and the long s that fold to k and s are not ASCII). The
// expression itself decides every other text.
func (c *Checker) mayHavePhrase(s string) bool {
	if c.folded == nil || !sdk.IsASCII(s) {
		return true
	}
	for _, p := range c.folded {
		if indexFold(s, p) {
			return true
		}
	}
	return false
}

// indexFold reports whether s holds p (ASCII lower case) as a substring,
// ASCII case aside. It looks for p's first letter in both cases.
func indexFold(s string, p []byte) bool {
	first, upper := p[0], p[0]
	if 'a' <= first && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for i := 0; i+len(p) <= len(s); i++ {
		j := strings.IndexAny(s[i:len(s)-len(p)+1], string([]byte{first, upper}))
		if j < 0 {
			return false
		}
		i += j
		if asciiEqualFold(s[i:i+len(p)], p) {
			return true
		}
	}
	return false
}

// asciiEqualFold compares an ASCII text with an ASCII lower-case one.
func asciiEqualFold(s string, lower []byte) bool {
	for k := range lower {
		c := s[k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[k] {
			return false
		}
	}
	return true
}

// notZeroedToken: an object that states a cannot-be-stated token must not
// also carry a number, and must give a reason.
func (c *Checker) notZeroedToken(f facts) error {
	val, ok := f.value, f.hasValue
	if !ok {
		// a family whose factors carry their assessability in a status
		// member holds those objects to the same rule
		val, ok = f.status, f.hasStatus
	}
	if !ok || !slices.Contains(c.absent, val) {
		return nil
	}
	if strings.TrimSpace(f.reason) == "" {
		return fmt.Errorf("%w: %s without a reason", ErrTripped, val)
	}
	if f.number {
		return fmt.Errorf("%w: %s beside a number", ErrTripped, val)
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
