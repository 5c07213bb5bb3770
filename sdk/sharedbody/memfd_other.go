//go:build !linux

package sharedbody

import (
	"io"
	"os"
)

// Body is a request body in a sealed in-memory file (Linux only).
type Body struct{}

// New reports that this platform has no sealed in-memory files.
func New([]byte) (*Body, error) { return nil, ErrUnsupported }

// Read reports that this platform has no sealed in-memory files; it reads
// nothing from the reader.
func Read(io.Reader, int64) (*Body, error) { return nil, ErrUnsupported }

// Len is the body's size in bytes.
func (b *Body) Len() int64 { return 0 }

// ReadAt is never reached: New always fails here.
func (b *Body) ReadAt([]byte, int64) (int, error) { return 0, ErrUnsupported }

// Close is never reached: New always fails here.
func (b *Body) Close() error { return nil }

// Sender is the host's end of a channel (Linux only).
type Sender struct{}

// Pair reports that this platform passes bodies inline.
func Pair() (*Sender, *os.File, error) { return nil, nil, ErrUnsupported }

// Env is never used here: Pair always fails.
func Env() string { return EnvFD + "=" }

// Send is never reached: Pair always fails.
func (s *Sender) Send(*Body) (uint64, error) { return 0, ErrUnsupported }

// Sent counts nothing here.
func (s *Sender) Sent() int64 { return 0 }

// Close is never reached: Pair always fails.
func (s *Sender) Close() error { return nil }

func inherited(string) conn { return nil }

func readSealed(*os.File, uint64, uint64) ([]byte, error) { return nil, ErrUnsupported }

func mapSealed(*os.File, uint64, uint64) ([]byte, func(), error) { return nil, nil, ErrUnsupported }
