package selfcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrRefusedLine is wrapped when a family's ledger fields break its
// declared closed list: the line is never written.
var ErrRefusedLine = errors.New("ledger line refused")

// LedgerFields is a family's declared ledger fields with their patterns
// compiled once: a line is checked on every paid answer.
type LedgerFields struct {
	decl     []*pb.LedgerField
	declared map[string]*pb.LedgerField
	// patterns holds each STRING field's anchored pattern; nil where it
	// does not compile (every value outside the vocabulary is refused)
	patterns map[string]*regexp.Regexp
}

// NewLedgerFields compiles decl.
func NewLedgerFields(decl []*pb.LedgerField) *LedgerFields {
	f := &LedgerFields{decl: decl, declared: make(map[string]*pb.LedgerField, len(decl)), patterns: map[string]*regexp.Regexp{}}
	for _, d := range decl {
		f.declared[d.GetName()] = d
		if p := d.GetPattern(); p != "" {
			re, err := regexp.Compile(`\A(?:` + p + `)\z`)
			if err != nil {
				re = nil
			}
			f.patterns[d.GetName()] = re
		}
	}
	return f
}

// CheckLedgerFields validates a family's ledger fields (a JSON object) against
// its declaration and returns them canonical. Every declared field must be
// present; no other key may be; each value must have the declared type, a
// string must be in the declared vocabulary or match the declared pattern,
// and null only where declared nullable. Errors name the rule, never a
// value.
func CheckLedgerFields(decl []*pb.LedgerField, raw []byte) (string, error) {
	return NewLedgerFields(decl).Check(raw)
}

// Check is CheckLedgerFields with the compiled declaration.
func (f *LedgerFields) Check(raw []byte) (string, error) {
	tree, err := sdk.DecodeJSON(raw)
	if err != nil {
		return "", fmt.Errorf("%w: not JSON", ErrRefusedLine)
	}
	fields, ok := tree.(map[string]any)
	if !ok {
		return "", fmt.Errorf("%w: not an object", ErrRefusedLine)
	}
	decl, declared := f.decl, f.declared
	for k := range fields {
		if declared[k] == nil {
			return "", fmt.Errorf("%w: undeclared key", ErrRefusedLine)
		}
	}
	for name, d := range declared {
		v, present := fields[name]
		if !present {
			return "", fmt.Errorf("%w: declared field %d missing", ErrRefusedLine, indexOf(decl, name))
		}
		if err := checkValue(d, v, f.patterns[name]); err != nil {
			return "", fmt.Errorf("%w: field %d: %s", ErrRefusedLine, indexOf(decl, name), err.Error())
		}
	}
	c, err := sdk.CanonicalJSON(fields)
	if err != nil {
		return "", fmt.Errorf("%w: not canonicalizable", ErrRefusedLine)
	}
	return string(c), nil
}

func indexOf(decl []*pb.LedgerField, name string) int {
	for i, d := range decl {
		if d.GetName() == name {
			return i
		}
	}
	return -1
}

func checkValue(d *pb.LedgerField, v any, pattern *regexp.Regexp) error {
	if v == nil {
		if d.GetNullable() {
			return nil
		}
		return errors.New("null where not nullable")
	}
	switch d.GetType() {
	case pb.LedgerField_NUMBER:
		if _, ok := v.(json.Number); ok {
			return nil
		}
		if s, ok := v.(string); ok {
			for _, w := range d.GetVocabulary() {
				if s == w {
					return nil
				}
			}
		}
		return errors.New("not a number")
	case pb.LedgerField_BOOL:
		if _, ok := v.(bool); !ok {
			return errors.New("not a boolean")
		}
	case pb.LedgerField_STRING:
		s, ok := v.(string)
		if !ok {
			return errors.New("not a string")
		}
		for _, w := range d.GetVocabulary() {
			if s == w {
				return nil
			}
		}
		if d.GetPattern() != "" {
			if pattern == nil {
				return errors.New("declared pattern does not compile")
			}
			if pattern.MatchString(s) {
				return nil
			}
		}
		return errors.New("string outside the declared vocabulary")
	default:
		return errors.New("declared type unknown")
	}
	return nil
}
