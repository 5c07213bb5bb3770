package hostcheck

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/assay-audit/assay/sdk"
)

// Causes Answer names: a closed set, so the host can count faults by cause
// (assay_adapter_faults_total) and an author can match on them.
const (
	FaultEmpty     = "empty"       // neither a record nor a refusal
	FaultUndecoded = "undecodable" // the answer is not an AdaptResponse
	FaultLevel     = "level"       // a level outside L0, L1, L2
	FaultSpan      = "span"        // a text span outside the record
	FaultCount     = "count"       // a negative count of the adapter's own
	FaultRefusal   = "refusal"     // a refusal without a code of the protocol's shape
)

var refusalCode = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Answer checks what the host can of an adapter's answer before a
// family sees it: that it decodes, says something, names a level the
// protocol has, keeps every text span inside the record of recordLen
// bytes, and counts no negative number of what it disclosed. Caps on
// entries are the family's (its criteria set them). It returns the cause
// and a detail of static text and numbers, or "" when the answer holds.
// It walks the wire form without building the answer (an answer at the
// cap holds 10,000 blocks: decoded, that is 31,000 allocations).
func Answer(f []byte, recordLen uint64) (cause, detail string) {
	var rec, ref []byte
	isRec := false
	if !eachField(f, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			rec, isRec = v, true
		case num == 2 && typ == protowire.BytesType:
			ref, isRec = v, false
		}
		return true
	}) {
		return FaultUndecoded, "the answer does not decode as an AdaptResponse"
	}
	switch {
	case ref != nil && !isRec:
		return checkRefusal(ref)
	case rec == nil:
		return FaultEmpty, "the answer holds neither a record nor a refusal"
	}
	return checkRecord(rec, recordLen)
}

func checkRefusal(ref []byte) (cause, detail string) {
	var code []byte
	if !eachField(ref, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		if num == 1 && typ == protowire.BytesType {
			code = v
		}
		return typ != protowire.BytesType || utf8.Valid(v) // code, message: strings
	}) {
		return FaultUndecoded, "the refusal does not decode"
	}
	if !refusalCode.Match(code) {
		return FaultRefusal, fmt.Sprintf("a refusal's code is not 1 to 64 of a-z, 0-9 and _ (%d bytes)", len(code))
	}
	return "", ""
}

func checkRecord(rec []byte, recordLen uint64) (cause, detail string) {
	var level []byte
	m, d := 0, 0
	ok := eachField(rec, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			level = v
			if !utf8.Valid(v) {
				cause, detail = FaultUndecoded, "the level is not UTF-8"
			}
		case num == 2 && typ == protowire.BytesType:
			m++
			cause, detail = checkMessage(v, m, recordLen)
		case num == 3 && typ == protowire.BytesType:
			d++
			cause, detail = checkDisclosure(v, d)
		}
		return cause == ""
	})
	switch {
	case cause != "":
		return cause, detail
	case !ok:
		return FaultUndecoded, "the record does not decode"
	}
	switch sdk.Level(level) {
	case sdk.L0, sdk.L1, sdk.L2:
	default:
		return FaultLevel, fmt.Sprintf("the level is not L0, L1 or L2 (%d bytes)", len(level))
	}
	return "", ""
}

func checkMessage(msg []byte, m int, recordLen uint64) (cause, detail string) {
	b := 0
	ok := eachField(msg, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		if num == 1 && typ == protowire.BytesType && !utf8.Valid(v) { // role_raw
			cause, detail = FaultUndecoded, fmt.Sprintf("message %d: a string that is not UTF-8", m)
			return false
		}
		if num != 2 || typ != protowire.BytesType {
			return true
		}
		b++
		return eachField(v, func(num protowire.Number, typ protowire.Type, span []byte, _ uint64) bool {
			if blockStrings[num] && typ == protowire.BytesType && !utf8.Valid(span) {
				// proto3 strings are UTF-8: the family's decoder refuses others
				cause, detail = FaultUndecoded, fmt.Sprintf("message %d block %d: a string that is not UTF-8", m, b)
				return false
			}
			if num != 9 || typ != protowire.BytesType {
				return true
			}
			var off, n uint64
			if !eachField(span, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) bool {
				switch {
				case num == 1 && typ == protowire.VarintType:
					off = x
				case num == 2 && typ == protowire.VarintType:
					n = x
				}
				return true
			}) {
				cause, detail = FaultUndecoded, fmt.Sprintf("message %d block %d: the text span does not decode", m, b)
				return false
			}
			if off > recordLen || n > recordLen-off {
				cause, detail = FaultSpan, fmt.Sprintf("message %d block %d: a text span ending at byte %d of a %d-byte record", m, b, off+n, recordLen)
				return false
			}
			return true
		})
	})
	if cause == "" && !ok {
		return FaultUndecoded, fmt.Sprintf("message %d does not decode", m)
	}
	return cause, detail
}

func checkDisclosure(disc []byte, d int) (cause, detail string) {
	var count uint64
	if !eachField(disc, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool {
		if num == 3 && typ == protowire.VarintType {
			count = x
		}
		return typ != protowire.BytesType || utf8.Valid(v) // code, message: strings
	}) {
		return FaultUndecoded, fmt.Sprintf("disclosure %d does not decode", d)
	}
	if int64(count) < 0 {
		return FaultCount, fmt.Sprintf("disclosure %d has a negative count", d)
	}
	return "", ""
}

// blockStrings are Block's string fields (kind_raw, name, source, text).
var blockStrings = map[protowire.Number]bool{1: true, 2: true, 4: true, 5: true}

// eachField calls each for every field of a wire message, with a length-
// delimited field's bytes or a varint's value, until each says stop; it
// reports false for a message that does not parse (or a stop).
func eachField(b []byte, each func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
		if !each(num, typ, v, x) {
			return false
		}
	}
	return true
}
