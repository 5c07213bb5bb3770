package divergence

// Span is a maximal run of differing offsets.
type Span struct {
	Start  int `json:"start"`
	Length int `json:"length"`
}

// Result is the comparison's closed set of facts.
type Result struct {
	ByteEqual bool
	// FirstDivergence is -1 when byte-equal.
	FirstDivergence int
	Spans           []Span
}

// Compare applies the criteria's comparison rule to S (streamed) and R
// (reference). Offsets past the shorter side differ by absence, so they form
// one run to the longer side's end, joined to a run that reaches the shorter
// side's last offset.
func Compare(s, r []byte) Result {
	short, long := len(s), len(r)
	if short > long {
		short, long = long, short
	}
	spans := []Span{}
	open := -1
	for i := 0; i < short; i++ {
		if s[i] != r[i] {
			if open < 0 {
				open = i
			}
		} else if open >= 0 {
			spans = append(spans, Span{Start: open, Length: i - open})
			open = -1
		}
	}
	if long > short {
		if open < 0 {
			open = short
		}
		spans = append(spans, Span{Start: open, Length: long - open})
	} else if open >= 0 {
		spans = append(spans, Span{Start: open, Length: short - open})
	}
	if len(spans) == 0 {
		return Result{ByteEqual: true, FirstDivergence: -1, Spans: spans}
	}
	return Result{FirstDivergence: spans[0].Start, Spans: spans}
}
