// Package family is the host tests' family: it can be told (through its
// request body) to sleep, crash, panic, or issue a report the self-check must
// stop. Its body cap is 5 MiB, the largest any criteria publishes, so tests
// prove a max-size body crosses the real boundary.
package family

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime/debug"
	"time"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

const document = `{"criteria_id":"test-family/v1","criteria_revision":"0.0.1","service":"test-family","version":"0.0.1","ops":["measure"],"corpus":{"id":"test-family-corpus/v1","sha256":"0000000000000000000000000000000000000000000000000000000000000000"},"price":{"usdc_units_per_call":1,"label":"$0.000001","basis":"per test"},"free_tier":{"per_day":100,"min_interval_ms":5000},"input_contract":{"caps":{"body_bytes":5242880}}}`

// Family is the test family.
type Family struct{ desc *pb.FamilyDescription }

// Its refusal codes and could-not-measure kind.
const (
	CodeBodyNotObject  sdk.RefusalCode       = "body_not_object"
	CodeRefused        sdk.RefusalCode       = "refused"
	KindTooManyEntries sdk.CannotMeasureKind = "too_many_entries"
)

// GoodNote is the note a report carries on verdict_word: a baseline
// verdict word ("good") the family's own tripwires do not list.
const GoodNote = "every tool has a good description"

// instructions is what a test asks for; every other member is padding.
type instructions struct {
	SleepMS int `json:"sleep_ms"`
	// SpinMS keeps a core busy that long and never looks at its context:
	// the runaway work a crafted input could find in an engine
	SpinMS         int    `json:"spin_ms"`
	ExitInMeasure  bool   `json:"exit_in_measure"`
	PanicInCheck   string `json:"panic_in_check"`
	GoroutinePanic string `json:"goroutine_panic"`
	ForbiddenWord  bool   `json:"forbidden_word"`
	// VerdictWord puts GoodNote in the report
	VerdictWord bool `json:"verdict_word"`
	BadLedger   bool `json:"bad_ledger"`
	// NilLedger answers with no ledger map at all.
	NilLedger bool `json:"nil_ledger"`
	// Adapt names a format: measuring sends Record (or the pad) through
	// the host to that format's adapter.
	Adapt    string `json:"adapt"`
	Record   string `json:"record"`
	Pad      string `json:"pad"`
	Refuse   bool   `json:"refuse"`
	CouldNot bool   `json:"could_not_measure"`
	Caller   string `json:"caller"`
	// WaitFile holds the measurement until the file exists (5 s at most)
	// and reports whether it appeared: a test's way of seeing what the
	// host does while the family measures
	WaitFile string `json:"wait_file"`
	// TouchFile is created as the measurement begins: a test's way of
	// seeing when the family started measuring
	TouchFile string `json:"touch_file"`
	// MemoryLimit asks a pre-check for the process's soft memory limit
	// as the request runs (sdk/membudget).
	MemoryLimit bool `json:"memory_limit"`
}

// Describe describes.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

// Check follows the body's instructions.
func (f *Family) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	var in instructions
	if json.Unmarshal(req.Body, &in) != nil {
		return sdk.RefuseRequest(sdk.Refusal{Code: CodeBodyNotObject, Message: "request body is not a JSON object"})
	}
	if in.PanicInCheck != "" {
		panic(in.PanicInCheck)
	}
	if in.CouldNot {
		return sdk.CannotMeasure(KindTooManyEntries,
			map[string]any{"could_not_measure": map[string]any{"kind": KindTooManyEntries, "entries": 3}})
	}
	if in.Refuse {
		return sdk.RefuseRequest(sdk.Refusal{Code: CodeRefused, Message: "refused on request", Facts: map[string]any{"n": 1}})
	}
	n := len(req.Body)
	withCaller := func(c sdk.Checked) sdk.Checked {
		if in.Caller != "" {
			return c.WithCaller(in.Caller)
		}
		return c
	}
	if req.Route == sdk.Precheck {
		// touch_file, then wait_file: a test sees which pre-checks are
		// in the family at once, and lets them go
		if in.TouchFile != "" {
			if f, err := os.Create(in.TouchFile); err == nil {
				f.Close()
			}
		}
		if in.WaitFile != "" {
			waitFor(ctx, in.WaitFile, 5*time.Second)
		}
		body := map[string]any{"assessable": true, "body_bytes": n}
		if in.MemoryLimit {
			body["memory_limit"] = debug.SetMemoryLimit(-1) // -1 reads it
		}
		return withCaller(sdk.Assessed(body))
	}
	return withCaller(sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
		if in.GoroutinePanic != "" {
			// the measurement waits for the crash: a deferred close would
			// run while the panic unwinds, letting a reply race out
			// before the runtime ends the process
			go func() { panic(in.GoroutinePanic) }()
			<-ctx.Done()
			return sdk.Report{}, ctx.Err()
		}
		if in.TouchFile != "" {
			if f, err := os.Create(in.TouchFile); err == nil {
				f.Close()
			}
		}
		if in.ExitInMeasure {
			os.Exit(3)
		}
		for end := time.Now().Add(time.Duration(in.SpinMS) * time.Millisecond); time.Now().Before(end); {
		}
		if in.SleepMS > 0 {
			select {
			case <-time.After(time.Duration(in.SleepMS) * time.Millisecond):
			case <-ctx.Done():
				return sdk.Report{}, ctx.Err()
			}
		}
		body := map[string]any{"body_bytes": n}
		if in.WaitFile != "" {
			body["file_seen"] = waitFor(ctx, in.WaitFile, 5*time.Second)
		}
		if in.Adapt != "" {
			record := in.Record
			if record == "" {
				record = in.Pad
			}
			if req.Adapters == nil {
				return sdk.Report{}, errors.New("no host service")
			}
			resp, err := req.Adapters.Adapt(ctx, &pb.AdaptRequest{FormatId: in.Adapt, Record: []byte(record)})
			if err != nil {
				return sdk.Report{}, err
			}
			if ref := resp.GetRefusal(); ref != nil {
				body["adapt_refusal"] = ref.GetCode()
			} else {
				rec := resp.GetRecord()
				body["adapted_level"] = rec.GetLevel()
				body["adapted_text_bytes"] = len(rec.GetMessages()[0].GetBlocks()[0].GetText())
				body["adapted_role"] = rec.GetMessages()[0].GetRoleRaw()
			}
		}
		if in.ForbiddenWord {
			body["score"] = 7
		}
		if in.VerdictWord {
			body["note"] = GoodNote
		}
		fields := map[string]any{"op": "measure"}
		if in.BadLedger {
			fields["pad"] = len(req.Body) // an undeclared key
		}
		if in.NilLedger {
			fields = nil
		}
		return sdk.Report{Body: body, Ledger: fields, CheckEnd: clock()}, nil
	}))
}

// waitFor is true once path exists, false when within has passed first.
func waitFor(ctx context.Context, path string, within time.Duration) bool {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	end := time.After(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case <-tick.C:
		case <-end:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// New builds the test family.
func New() (*Family, error) {
	d, err := sdk.DescribeFromCriteria([]byte(document))
	if err != nil {
		return nil, err
	}
	d.Tripwires = &pb.Tripwires{ForbiddenMembers: []string{"score"}, ForbiddenPhrases: []string{"verified"}}
	d.LedgerFields = []*pb.LedgerField{{Name: "op", Type: pb.LedgerField_STRING, Vocabulary: []string{"measure"}}}
	// accepts test-format only; "other-format" has an adapter nowhere and
	// "unlisted-format" is installed in no criteria
	d.Formats = []string{"test-format", "other-format"}
	return &Family{desc: d}, nil
}
