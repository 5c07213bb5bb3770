package composition

import (
	"bytes"
	"encoding/json"
)

// maxStated is the largest valid stated figure: 15 digits, exact in a
// JavaScript number too (ANNEX C-10).
const maxStated = 999_999_999_999_999

// Stated is what a submission states of its own size (M12): the envelope's
// harness_stated_counts and, for a generic record, its own figures.
type Stated struct {
	Total    int64
	HasTotal bool
	// PerMessage[i] is message i's stated figure; Covered[i] says it has one.
	PerMessage []int64
	Covered    []bool
	Ignored    int // per_message entries beyond the record's messages
	Invalid    int // entries neither null nor valid, and an invalid total
	Any        bool
}

type statedCounts struct {
	Total      json.RawMessage   `json:"total"`
	PerMessage []json.RawMessage `json:"per_message"`
}

// validStated reads a valid stated figure: a JSON number literal of 1 to
// 15 digits, no sign, fraction or exponent.
func validStated(raw json.RawMessage) (int64, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || len(t) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = 10*n + int64(c-'0')
	}
	return n, true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// ReadStated combines the envelope's stated counts with the record's own
// (ANNEX C-10, C-12, C-13): the envelope's figure wins where both state a
// unit. A per_message member that is not an array is no statement.
func ReadStated(statedJSON []byte, c *Classified, recordTotal int64, recordHasTotal bool) Stated {
	var sc statedCounts
	if statedJSON != nil {
		_ = json.Unmarshal(statedJSON, &sc) // shape checked at validation; a non-array per_message reads as none
		var top map[string]json.RawMessage
		if json.Unmarshal(statedJSON, &top) == nil {
			if _, isArray := top["per_message"]; isArray && !bytes.HasPrefix(bytes.TrimSpace(top["per_message"]), []byte("[")) {
				sc.PerMessage = nil
			}
		}
	}
	s := Stated{PerMessage: make([]int64, c.Messages), Covered: make([]bool, c.Messages)}
	if sc.Total != nil && !isNull(sc.Total) {
		if n, ok := validStated(sc.Total); ok {
			s.Total, s.HasTotal = n, true
		} else {
			s.Invalid++
		}
	}
	if !s.HasTotal && recordHasTotal && recordTotal >= 0 && recordTotal <= maxStated {
		s.Total, s.HasTotal = recordTotal, true
	}
	for i, raw := range sc.PerMessage {
		if i >= c.Messages {
			s.Ignored++
			continue
		}
		if isNull(raw) {
			continue
		}
		if n, ok := validStated(raw); ok {
			s.PerMessage[i], s.Covered[i] = n, true
			s.Any = true
		} else {
			s.Invalid++
		}
	}
	for _, m := range c.Msgs {
		if m.Schema || !m.HasStated {
			continue
		}
		s.Any = true
		if !s.Covered[m.Index] {
			s.PerMessage[m.Index], s.Covered[m.Index] = m.Stated, true
		}
	}
	if s.HasTotal || c.AnyBlockStated {
		s.Any = true
	}
	return s
}

// CoveredCount is how many messages carry a stated figure.
func (s Stated) CoveredCount() int {
	n := 0
	for _, c := range s.Covered {
		if c {
			n++
		}
	}
	return n
}

// Status is F-10's assessability (ANNEX C-10): "" when assessable, else
// the reason. Partial coverage leaves it assessable: only the whole-record
// figure is then NOT-ASSESSABLE (M12; Partial).
func (s Stated) Status() string {
	if !s.Any {
		return noStatedCounts
	}
	return ""
}

// Partial reports M12's partial coverage: no valid total and a message
// of the record's messages uncovered, so no whole-record figure.
func (s Stated) Partial(messages int) bool {
	return !s.HasTotal && s.CoveredCount() < messages
}
