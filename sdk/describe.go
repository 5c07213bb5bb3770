package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// DescribeOption adds what the criteria document does not state to a
// family's description (Describe).
type DescribeOption func(d *pb.FamilyDescription) error

// Describe is a family's description: what its criteria document states
// (DescribeFromCriteria: ids, ops, price, body cap, free tier, corpus pin,
// and accepted_formats when the document has them), then each option.
// An option that cannot hold (a ledger pattern that does not compile, a
// field named twice, a request schema that is not a JSON object) is a
// described error, here rather than at a host's load.
func Describe(criteria []byte, opts ...DescribeOption) (*pb.FamilyDescription, error) {
	d, err := DescribeFromCriteria(criteria)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Formats []string `json:"accepted_formats"`
	}
	if json.Unmarshal(criteria, &doc) == nil {
		// the formats a family accepts are its criteria's: the host
		// routes each to its adapter
		d.Formats = doc.Formats
	}
	for _, o := range opts {
		if err := o(d); err != nil {
			return nil, fmt.Errorf("describe: %w", err)
		}
	}
	return d, nil
}

// WithCorpus is the family's corpus file (its pin is the criteria's
// corpus.sha256): a host runs it before serving the family.
func WithCorpus(corpus []byte) DescribeOption {
	return func(d *pb.FamilyDescription) error {
		if len(corpus) == 0 {
			return errors.New("the corpus is empty")
		}
		d.Corpus = corpus
		return nil
	}
}

// WithFormats replaces the formats read from the criteria's
// accepted_formats.
func WithFormats(formats ...string) DescribeOption {
	return func(d *pb.FamilyDescription) error {
		d.Formats = formats
		return nil
	}
}

// WithRequestSchema is the request body's JSON Schema (2020-12), for the
// host's OpenAPI document and its 402s' discovery metadata. It describes;
// the family's own validation decides.
func WithRequestSchema(schema []byte) DescribeOption {
	return func(d *pb.FamilyDescription) error {
		var obj map[string]any
		if json.Unmarshal(schema, &obj) != nil {
			return errors.New("the request schema is not a JSON object")
		}
		d.RequestSchema = schema
		return nil
	}
}

// WithRecord says the request body holds a record in a declared format:
// the top-level member formatMember names the format and recordMember
// holds the record. The host then publishes, for each format the family
// accepts, the record schema its adapter describes, in place of the
// family's own description of recordMember: a caller sees every format's
// shape, and a new adapter's appears without a family release.
func WithRecord(formatMember, recordMember string) DescribeOption {
	return func(d *pb.FamilyDescription) error {
		if formatMember == "" || recordMember == "" || formatMember == recordMember {
			return errors.New("the record's format member and record member: two names")
		}
		d.FormatMember, d.RecordMember = formatMember, recordMember
		return nil
	}
}

// LedgerType is a ledger field's JSON type.
type LedgerType int

// The ledger field types.
const (
	LedgerNumberType LedgerType = iota + 1
	LedgerBoolType
	LedgerStringType
)

// LedgerField is one of the family's closed ledger fields: every paid
// answer's line carries each, of its type (see the constructors).
type LedgerField struct {
	Name string
	Type LedgerType
	// Nullable lets the value be null.
	Nullable bool
	// Vocabulary: a string must be one of them, or match Pattern; a
	// number may also be one of them (e.g. NOT-COMPUTABLE).
	Vocabulary []string
	// Pattern is an RE2 expression a string must match whole.
	Pattern string
}

// LedgerString is a string field whose value is one of vocabulary.
func LedgerString(name string, vocabulary ...string) LedgerField {
	return LedgerField{Name: name, Type: LedgerStringType, Vocabulary: vocabulary}
}

// LedgerPattern is a string field whose value matches pattern whole.
func LedgerPattern(name, pattern string) LedgerField {
	return LedgerField{Name: name, Type: LedgerStringType, Pattern: pattern}
}

// LedgerNumber is a number field; vocabulary names the strings allowed in
// its place (the criteria's own tokens).
func LedgerNumber(name string, vocabulary ...string) LedgerField {
	return LedgerField{Name: name, Type: LedgerNumberType, Vocabulary: vocabulary}
}

// LedgerBool is a boolean field.
func LedgerBool(name string) LedgerField { return LedgerField{Name: name, Type: LedgerBoolType} }

// OrNull is f, its value allowed to be null.
func (f LedgerField) OrNull() LedgerField {
	f.Nullable = true
	return f
}

// WithLedgerFields is the family's closed list of ledger fields.
func WithLedgerFields(fields ...LedgerField) DescribeOption {
	return func(d *pb.FamilyDescription) error {
		seen := map[string]bool{}
		for i, f := range fields {
			if f.Name == "" || seen[f.Name] {
				return fmt.Errorf("ledger field %d: a name, each once", i)
			}
			seen[f.Name] = true
			if f.Pattern != "" {
				if _, err := regexp.Compile(f.Pattern); err != nil {
					return fmt.Errorf("ledger field %d: the pattern does not compile", i)
				}
			}
			var t pb.LedgerField_Type
			switch f.Type {
			case LedgerNumberType:
				t = pb.LedgerField_NUMBER
			case LedgerBoolType:
				t = pb.LedgerField_BOOL
			case LedgerStringType:
				t = pb.LedgerField_STRING
			default:
				return fmt.Errorf("ledger field %d: no type (use LedgerString, LedgerPattern, LedgerNumber or LedgerBool)", i)
			}
			d.LedgerFields = append(d.LedgerFields, &pb.LedgerField{Name: f.Name, Type: t, Nullable: f.Nullable,
				Vocabulary: f.Vocabulary, Pattern: f.Pattern})
		}
		return nil
	}
}

// Tripwires are what the host checks of every answer before it is signed
// (docs/self-check.md has each list, with examples).
type Tripwires struct {
	// AbsentTokens are the criteria's "cannot be stated" tokens
	// (NOT-ASSESSABLE, ...): never a zero beside them.
	AbsentTokens []string
	// ForbiddenPhrases no answer may contain (words, case aside) outside
	// ExemptSentences and ExemptMembers.
	ForbiddenPhrases []string
	// ExemptSentences are the criteria's own fixed sentences.
	ExemptSentences []string
	// ForbiddenMembers no answer may carry at any depth (composite, grade).
	ForbiddenMembers []string
	// ExemptMembers hold strings the caller chose and the criteria let
	// the answer print (labels, ids): exempt from ForbiddenPhrases, and
	// the only members where a submitted string may appear.
	ExemptMembers []string
	// CountNames and CountSuffixes name members holding JSON numbers.
	CountNames, CountSuffixes []string
	// EstimateNames and EstimateSuffixes name members holding estimates
	// ("est:~N") or an absent token's object.
	EstimateNames, EstimateSuffixes []string
	// Limited ties a headline's LIMITED marker to the factors (nil: none).
	Limited *LimitedRule
	// VerdictWaivers lift words of the host's baseline of verdict words
	// (selfcheck.VerdictWords: score, pass, good, ...) that the criteria
	// require in an answer, not as a judgement. Each names the word as the
	// baseline spells it and the reason, the same word and reason the
	// criteria's ANNEX states. A host refuses a waiver of a word not on
	// its baseline, or one without a reason.
	VerdictWaivers []VerdictWaiver
}

// VerdictWaiver lifts one baseline verdict word for the family's answers,
// for the reason its criteria's ANNEX states.
type VerdictWaiver struct {
	Word, Reason string
}

// Waivers is the wire's form of waivers, for a family that fills
// pb.Tripwires itself.
func Waivers(waivers ...VerdictWaiver) []*pb.VerdictWaiver {
	if len(waivers) == 0 {
		return nil
	}
	out := make([]*pb.VerdictWaiver, len(waivers))
	for i, w := range waivers {
		out[i] = &pb.VerdictWaiver{Word: w.Word, Reason: w.Reason}
	}
	return out
}

// LimitedRule: the string at top-level member Line contains LimitedWord
// exactly when an object of the top-level array Factors has StatusMember
// equal to an absent token and IDMember not in ExemptIDs; else FullWord.
type LimitedRule struct {
	Line, Factors, IDMember, StatusMember string
	ExemptIDs                             []string
	LimitedWord, FullWord                 string
}

// WithTripwires is the family's tripwires. A verdict waiver without a
// word or a reason is an error here; one whose word is not on the host's
// baseline is refused by the host's description check
// (hostcheck.Description, which familytest and plugintest run).
func WithTripwires(t Tripwires) DescribeOption {
	return func(d *pb.FamilyDescription) error {
		for i, w := range t.VerdictWaivers {
			if w.Word == "" || strings.TrimSpace(w.Reason) == "" {
				return fmt.Errorf("verdict waiver %d: a word and the reason the criteria's ANNEX states", i+1)
			}
		}
		d.Tripwires = &pb.Tripwires{AbsentTokens: t.AbsentTokens, ForbiddenPhrases: t.ForbiddenPhrases, ExemptSentences: t.ExemptSentences,
			ForbiddenMembers: t.ForbiddenMembers, ExemptMembers: t.ExemptMembers, CountNames: t.CountNames, CountSuffixes: t.CountSuffixes,
			EstimateNames: t.EstimateNames, EstimateSuffixes: t.EstimateSuffixes, VerdictWaivers: Waivers(t.VerdictWaivers...)}
		if l := t.Limited; l != nil {
			d.Tripwires.Limited = &pb.LimitedRule{Line: l.Line, Factors: l.Factors, IdMember: l.IDMember, StatusMember: l.StatusMember,
				ExemptIds: l.ExemptIDs, LimitedWord: l.LimitedWord, FullWord: l.FullWord}
		}
		return nil
	}
}
