package composition

import (
	"slices"
	"strings"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Axis-P classes in the criteria's total order.
const (
	PTdef  = "P-TDEF"
	PCmpt  = "P-CMPT"
	PTcall = "P-TCALL"
	PTres  = "P-TRES"
	PRetr  = "P-RETR"
	PSys   = "P-SYS"
	PUser  = "P-USER"
	PAsst  = "P-ASST"
	POther = "P-OTHER"
	PUnk   = "P-UNK"
)

// Structural classes cannot be identified from a bare role list (L0/L1).
var Structural = []string{PTdef, PCmpt, PTcall, PTres, PRetr}

const compactionMarker = "have been hidden from view due to"

var retrievalTools = []string{"archival_memory_search", "conversation_search"}

// PClass is one block's axis-P result: the winner and the classes that
// also fired (a conflict when there are any).
type PClass struct {
	Class  string
	Losers []string
	// Raw holds the unmatched raw values when the class is P-OTHER.
	Raw []string
}

// ClassifyP applies ANNEX C-9 to a block of a message with the given role.
// level is the record's level; format picks the structural lists.
func ClassifyP(format, level, role string, schema bool, b *pb.Block) PClass {
	var fired []string
	fire := func(c string, ok bool) {
		if ok {
			fired = append(fired, c)
		}
	}
	kind, text := b.GetKindRaw(), b.GetText()
	structural := level == "L2"
	if structural {
		switch format {
		case "letta-af":
			fire(PTdef, kind == "tool_definition" || schema)
			fire(PCmpt, role == "summary" || containsMarker(text))
			fire(PTcall, kind == "tool_call")
			fire(PTres, role == "tool" || kind == "tool_return")
			fire(PRetr, (role == "tool" || kind == "tool_return") && slices.Contains(retrievalTools, b.GetName()))
			fire(PSys, role == "system" || kind == "heartbeat" || kind == "login" || kind == "system_alert")
		default: // generic at L2
			fire(PTdef, kind == "tool_definition" || schema)
			fire(PCmpt, kind == "summary")
			fire(PTcall, kind == "tool_call")
			fire(PTres, kind == "tool_result")
			fire(PRetr, kind == "retrieval")
			fire(PSys, role == "system")
		}
	} else {
		fire(PSys, role == "system")
	}
	fire(PUser, role == "user")
	fire(PAsst, role == "assistant")
	if len(fired) > 0 {
		return PClass{Class: fired[0], Losers: fired[1:]}
	}
	// nothing fired: every non-empty raw value the level reads matched no
	// class list (a value on a list always fires its class), so all of
	// them are reported (ANNEX C-9)
	var raw []string
	if role != "" {
		raw = append(raw, role)
	}
	if structural && kind != "" {
		raw = append(raw, kind)
	}
	if len(raw) > 0 {
		return PClass{Class: POther, Raw: raw}
	}
	return PClass{Class: PUnk}
}

func containsMarker(s string) bool { return strings.Contains(s, compactionMarker) }
