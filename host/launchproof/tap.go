package launchproof

import (
	"bytes"
	"io"
	"sync"
)

// tapLimit bounds what a tap keeps: a proof's own lines are a few MB.
const tapLimit = 256 << 20

// Tap is the host log's writer, keeping a copy of what passes while a
// proof runs, so the proof can search the log for its canary (the
// plugins' stderr reaches the same log).
type Tap struct {
	out   io.Writer
	mu    sync.Mutex
	buf   *bytes.Buffer // nil while no proof reads
	users int
}

// NewTap writes to out.
func NewTap(out io.Writer) *Tap { return &Tap{out: out} }

func (t *Tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	if t.buf != nil && t.buf.Len() < tapLimit {
		t.buf.Write(p)
	}
	t.mu.Unlock()
	return t.out.Write(p)
}

// Begin starts keeping the log for one reader; the offset it returns is
// where that reader's window begins (End).
func (t *Tap) Begin() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil {
		t.buf = &bytes.Buffer{}
	}
	t.users++
	return t.buf.Len()
}

// End is what the log kept since the reader's Begin; the copy stops when
// the last reader ends.
func (t *Tap) End(offset int) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil {
		return nil
	}
	out := bytes.Clone(t.buf.Bytes()[min(offset, t.buf.Len()):])
	if t.users--; t.users <= 0 {
		t.buf, t.users = nil, 0
	}
	return out
}
