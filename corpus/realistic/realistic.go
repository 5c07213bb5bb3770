// Package realistic writes large, realistic context-audit request bodies
// (envelope context-composition-envelope/1) for benchmarking the
// context-composition/v1 engine: long agent conversations with varied
// prose, code, JSON tool payloads, base64 blobs of both alphabets, exact and
// near duplicates, and stated token counts, in each declared format.
//
// The generator is written from the published criteria, the ANNEX and the
// format notes only, never from the engine it benchmarks, so the two cannot
// share a misreading.
package realistic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Published caps of context-composition/v1 (criteria input_contract.caps).
const (
	// BodyCap is the body cap in bytes ("body up to 5 MiB"; over it is a
	// free 413 refusal).
	BodyCap = 5242880
	// EntryCap is the entry cap; an entry is one block of the adapted
	// record, schema blocks included (ANNEX C-2, C-8).
	EntryCap = 10000
	// EntryBytesCap caps one block's adapted text in UTF-8 bytes.
	EntryBytesCap = 1048576
	// StatedCountsCap caps harness_stated_counts serialised.
	StatedCountsCap = 65536
)

// MinSize is the smallest body Record writes: below it the fixed parts (a
// system prompt, tool definitions, a Letta agent's settings) would be most
// of the record and it would not look like a long conversation.
const MinSize = 64 << 10

// Formats lists the declared format ids the package writes.
var Formats = []string{"letta-af", "anthropic-messages", "generic-message-list"}

// Margins kept below the entry and stated-count caps: those are measured
// by the service's adapter, which this package deliberately does not
// share, so a record is kept a little short of them in case the two ever
// count an edge case differently.
const (
	entryHeadroom  = 40
	statedHeadroom = 4096
)

// Record returns a complete request body (the JSON envelope the paid
// /context-audit/audit call takes, with declared_format_id set to format)
// whose total size is within 2% below `size` bytes and never above it,
// built deterministically from seed (same inputs, same bytes).
func Record(format string, size int, seed uint64) ([]byte, error) {
	if size > BodyCap {
		return nil, fmt.Errorf("realistic: size %d bytes is above the criteria's body cap of %d bytes (context-composition/v1 input_contract.caps.body_bytes); a larger body is refused with 413", size, BodyCap)
	}
	if size < MinSize {
		return nil, fmt.Errorf("realistic: size %d bytes is below the minimum of %d bytes", size, MinSize)
	}
	var s sink
	switch format {
	case "letta-af":
		s = &lettaSink{}
	case "anthropic-messages":
		s = &anthropicSink{}
	case "generic-message-list":
		s = &genericSink{}
	default:
		return nil, fmt.Errorf("realistic: unknown format %q (want one of %v)", format, Formats)
	}
	g := newGen(format, size, seed)
	body, err := g.run(s)
	if err != nil {
		return nil, err
	}
	if len(body) > size || len(body)*50 < size*49 {
		return nil, fmt.Errorf("realistic: internal error: body is %d bytes for a requested %d", len(body), size)
	}
	return body, nil
}

// formatSalt keeps the three formats' streams apart for one seed.
var formatSalt = map[string]uint64{
	"letta-af":             0x6c65747461,
	"anthropic-messages":   0x616e7468726f,
	"generic-message-list": 0x67656e65726963,
}

// gen is one record's generator state; everything random comes from r.
type gen struct {
	r      *rand.Rand
	p      prose
	format string
	size   int
	now    time.Time
	scale  float64

	// recent bytes and entries per turn, for the scale controller
	emaBytes, emaBlocks float64

	plan  plan
	pairs []*pendingPair

	reminders []string // the record's fixed system reminders (exact duplicates)
	canned    []string // canned short replies and thoughts (exact duplicates)
	files     []fileRead
	turnNo    int
	small     bool
}

type fileRead struct {
	path, text string
}

func newGen(format string, size int, seed uint64) *gen {
	r := rand.New(rand.NewPCG(seed, seed^formatSalt[format]^0x9e3779b97f4a7c15))
	g := &gen{r: r, p: prose{r}, format: format, size: size, scale: 1}
	start := time.Date(2025, time.March, 1, 8, 0, 0, 0, time.UTC)
	g.now = start.Add(time.Duration(r.IntN(300*24)) * time.Hour).Add(time.Duration(r.IntN(3600)) * time.Second)
	g.plan = newPlan(size)
	for i := 0; i < 3; i++ {
		g.reminders = append(g.reminders, g.reminderText(i))
	}
	for i := 0; i < 6; i++ {
		g.canned = append(g.canned, g.p.sentence())
	}
	return g
}

// tick moves the session clock by a plausible gap between two messages.
func (g *gen) tick() time.Time {
	switch g.r.IntN(10) {
	case 0:
		g.now = g.now.Add(time.Duration(5+g.r.IntN(600)) * time.Minute)
	case 1, 2:
		g.now = g.now.Add(time.Duration(20+g.r.IntN(240)) * time.Second)
	default:
		g.now = g.now.Add(time.Duration(1500+g.r.IntN(9000)) * time.Millisecond)
	}
	g.now = g.now.Add(time.Duration(g.r.IntN(1000)) * time.Microsecond)
	return g.now
}

// n scales a length draw by the controller's factor; a count that is at
// least one stays at least one.
func (g *gen) n(lo, hi int) int {
	v := lo + g.r.IntN(hi-lo+1)
	return max(int(float64(v)*g.scale+0.5), min(lo, 1))
}

// mark is a sink's accounting position, for undoing a turn that did not fit.
type mark struct {
	chunks, blocks, msgs, bytes int
	statedAll, statedLast       int
	extra                       int
}

// sink renders the conversation into one format.
type sink interface {
	begin(g *gen)
	user(g *gen, u userMsg)
	assistant(g *gen, a asstMsg)
	results(g *gen, rs []toolResult, reminder string)
	heartbeat(g *gen)

	// Adapted text of the block a near-duplicate member lands in.
	userBlock(g *gen, parts []string) string
	replyBlock(g *gen, text string) string
	resultBlock(g *gen, name, raw string, ok bool) string

	acc() *acct
	// assemble writes the whole body; fill is the text of the final user
	// message (ASCII without characters JSON escapes).
	assemble(g *gen, fill string) string
	// fixedBytes is every byte outside the messages array's chunks and
	// separators, as assemble would write it now with an empty fill.
	fixedBytes() int
}

// hint says what a message mostly holds, for the stated-count model.
type hint uint8

const (
	hProse hint = iota
	hCode
	hJSON
	hBlob
)

type attach struct {
	name, media, data string
}

type userMsg struct {
	parts    []string
	images   []attach
	reminder string
	hint     hint
}

type toolCall struct {
	id, name string
	args     *obj
}

type asstMsg struct {
	thinking string
	text     string
	calls    []*toolCall
}

type toolResult struct {
	call  *toolCall
	raw   string
	ok    bool
	image *attach
	hint  hint
}

// acct is the shared size and entry accounting of a sink.
type acct struct {
	chunks   []string
	bytes    int // Σ len(chunks)
	blocks   int // entries so far, schema blocks included
	measured []int
	stated   []int // -1 = not stated
	schemaE  int
	// Serialised length of the per_message entries: all of them, and up
	// to the last non-null one (what is written, trailing nulls dropped).
	statedAll, statedLast int
	extra                 int // a sink's own running byte count
}

func (a *acct) mark() mark {
	return mark{chunks: len(a.chunks), blocks: a.blocks, msgs: len(a.measured), bytes: a.bytes,
		statedAll: a.statedAll, statedLast: a.statedLast, extra: a.extra}
}

func (a *acct) rollback(m mark) {
	a.chunks = a.chunks[:m.chunks]
	a.blocks = m.blocks
	a.measured = a.measured[:m.msgs]
	a.stated = a.stated[:m.msgs]
	a.bytes = m.bytes
	a.statedAll, a.statedLast, a.extra = m.statedAll, m.statedLast, m.extra
}

func (a *acct) push(chunk string) {
	a.chunks = append(a.chunks, chunk)
	a.bytes += len(chunk)
}

// em1 is the criteria's EM-1 estimate of one block: ceil(C/4) with C the
// code-point count of the NFC text. Every non-ASCII character the
// generator writes (precomposed letters, dashes, quotes, emoji) is NFC
// already, so C is the rune count.
func em1(s string) int {
	c := 0
	for range s {
		c++
	}
	return (c + 3) / 4
}

// statedFor draws a harness's own token figure for a message measured at e,
// or -1 when the harness stated nothing for it. Real tokenizers count code,
// JSON and base64 as more tokens per character than prose, so those
// messages drift further from EM-1.
func (g *gen) statedFor(e int, h hint, coverage float64) int {
	if g.r.Float64() >= coverage {
		return -1
	}
	if e == 0 {
		return g.r.IntN(2)
	}
	var lo, hi float64
	switch {
	case g.r.IntN(10) < 5:
		lo, hi = 0.965, 1.035
	case h == hCode:
		lo, hi = 1.08, 1.45
	case h == hJSON:
		lo, hi = 1.1, 1.55
	case h == hBlob:
		lo, hi = 1.3, 1.95
	default:
		lo, hi = 0.82, 1.22
	}
	return int(float64(e)*(lo+(hi-lo)*g.r.Float64()) + 0.5)
}

// run drives the conversation until the body is full, then closes it with
// a final user message sized to land exactly on the requested size.
func (g *gen) run(s sink) ([]byte, error) {
	s.begin(g)
	a := s.acc()
	const fillReserve = 900
	fails := 0
	for fails < 6 {
		m := a.mark()
		before := a.bytes
		blocksBefore := a.blocks
		g.turn(s)
		total := s.fixedBytes() + a.bytes
		if total+fillReserve > g.size || a.blocks+1 > EntryCap-entryHeadroom {
			a.rollback(m)
			fails++
			g.small = true
			continue
		}
		g.steer(s, a.bytes-before, a.blocks-blocksBefore)
	}
	// Anything still pending would leave a near-duplicate pair half
	// written; that is harmless (a lone paragraph), so it is dropped.
	fill0 := s.assemble(g, "")
	gap := g.size - len(fill0)
	if gap < 0 {
		return nil, errors.New("realistic: internal error: the record overran its size before the final message")
	}
	if gap > EntryBytesCap/2 {
		return nil, fmt.Errorf("realistic: internal error: %d bytes left for the final message", gap)
	}
	body := s.assemble(g, g.fillText(gap))
	return []byte(body), nil
}

// steer adjusts the length scale so that the bytes and the entries run
// out together: the record then has as many messages as the entry cap
// allows for its size. It projects the final entry count from the recent
// bytes per entry and nudges the scale: longer blocks when the entries
// would run out first, shorter ones (down to a floor that keeps answers
// and tool outputs plausible) when bytes would.
func (g *gen) steer(s sink, turnBytes, turnBlocks int) {
	const alpha = 0.05
	if turnBlocks == 0 {
		return
	}
	if g.emaBlocks == 0 {
		g.emaBytes, g.emaBlocks = float64(turnBytes), float64(turnBlocks)
	} else {
		g.emaBytes += alpha * (float64(turnBytes) - g.emaBytes)
		g.emaBlocks += alpha * (float64(turnBlocks) - g.emaBlocks)
	}
	a := s.acc()
	left := float64(g.size - s.fixedBytes() - a.bytes)
	projected := float64(a.blocks) + left/(g.emaBytes/g.emaBlocks)
	if projected > float64(EntryCap-entryHeadroom-250) {
		g.scale *= 1.03
	} else {
		g.scale /= 1.03
	}
	g.scale = min(max(g.scale, 0.3), 6)
}

// fillText is ASCII prose of exactly n bytes with no character JSON
// escapes, so it adds exactly n bytes in every format's encoding.
func (g *gen) fillText(n int) string {
	var b []byte
	for len(b) < n {
		s := g.p.sentence()
		if strings.IndexFunc(s, func(r rune) bool { return r >= 0x7f || r == '"' || r == '\\' }) >= 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, s...)
	}
	b = b[:n]
	if n > 1 {
		b[n-1] = '.'
	}
	return string(b)
}
