// Package sharedbody hands a request body from the host to a plugin
// process without streaming it through gRPC. The host writes the body once
// into a sealed in-memory file (Linux memfd: RAM only, no path on any
// filesystem, gone when the last descriptor closes) and passes the
// descriptor over a socket pair it opened when it launched the plugin. The
// plugin maps the range it needs read-only (TakeMapped) or reads it into a
// buffer of its own (Take).
//
// Why: over go-plugin's connection a 5 MiB body is cut into 16 KiB HTTP/2
// frames, encrypted and decrypted (AutoMTLS), flow-controlled and
// reassembled, twice per audit (host to family, host to adapter); measured,
// that was 10-30 ms a hop on the request's path. A descriptor crosses in
// one message, and one pread copies the body.
//
// The socket pair is private to the two processes (inherited at exec, never
// named), so it widens nothing go-plugin's mTLS protects. The file is
// sealed against any change before it is sent, so what a plugin reads is
// what the host received.
package sharedbody

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"time"
)

// EnvFD names the environment variable that tells a plugin which inherited
// descriptor is its end of the channel.
const EnvFD = "ASSAY_SHARED_BODY_FD"

// Errors. None carries anything from a body.
var (
	ErrUnsupported = errors.New("shared bodies are not supported on this platform")
	ErrClosed      = errors.New("shared body channel closed")
	ErrRange       = errors.New("shared body range outside the file")
	ErrUnsealed    = errors.New("shared body is not sealed")
	ErrTimeout     = errors.New("shared body did not arrive before the deadline")
	// ErrSource is the reader Read copies from failing (a client that
	// went away), as against the file failing.
	ErrSource = errors.New("shared body source failed")
)

// staleAfter is how long a descriptor nobody asked for is kept: longer
// than any request's deadline, so only an abandoned request's body is
// dropped.
const staleAfter = 5 * time.Minute

// tokenBytes is a message's payload: the token, little endian.
const tokenBytes = 8

func putToken(t uint64) []byte {
	var b [tokenBytes]byte
	binary.LittleEndian.PutUint64(b[:], t)
	return b[:]
}

// Receiver is a plugin's end of the channel: one goroutine, owned by the
// Receiver, files each arriving descriptor under its token until Take
// claims it.
type Receiver struct {
	conn conn

	mu    sync.Mutex
	slots map[uint64]*slot
	done  chan struct{}
	now   func() time.Time
}

type slot struct {
	file chan *os.File // capacity 1
	at   time.Time
}

// conn is the platform's socket: receive one token and descriptor, or
// shut down.
type conn interface {
	recv() (token uint64, f *os.File, err error)
	shutdown()
}

// FromEnv opens the channel the host passed this process, or returns nil
// when there is none (an older host, another platform, or a plugin run by
// hand): the plugin then receives bodies inline, as before.
func FromEnv() *Receiver {
	c := inherited(os.Getenv(EnvFD))
	if c == nil {
		return nil
	}
	return newReceiver(c)
}

func newReceiver(c conn) *Receiver {
	r := &Receiver{conn: c, slots: map[uint64]*slot{}, done: make(chan struct{}), now: time.Now}
	go r.loop()
	return r
}

func (r *Receiver) loop() {
	defer close(r.done)
	for {
		token, f, err := r.conn.recv()
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			return // the host closed its end, or Close shut ours
		}
		r.deliver(token, f)
	}
}

// errSkip is a malformed message, already discarded; the channel goes on.
var errSkip = errors.New("malformed message")

func (r *Receiver) deliver(token uint64, f *os.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for t, s := range r.slots {
		if len(s.file) == 1 && now.Sub(s.at) > staleAfter {
			(<-s.file).Close()
			delete(r.slots, t)
		}
	}
	s := r.slotLocked(token)
	s.at = now
	select {
	case s.file <- f:
	default:
		f.Close() // a token sent twice: the first stands
	}
}

func (r *Receiver) slotLocked(token uint64) *slot {
	s, ok := r.slots[token]
	if !ok {
		s = &slot{file: make(chan *os.File, 1), at: r.now()}
		r.slots[token] = s
	}
	return s
}

// Take waits for the descriptor sent under token, reads length bytes from
// offset into a new buffer, and closes it. ctx bounds the wait.
func (r *Receiver) Take(ctx context.Context, token, offset, length uint64) ([]byte, error) {
	f, err := r.wait(ctx, token)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSealed(f, offset, length)
}

// TakeMapped is Take without the copy: the range is mapped read-only from
// the sealed file, so the plugin reads the very pages the host wrote (the
// kernel counts them once, and no buffer is allocated, zeroed and filled).
// The bytes stay valid until release is called (once; later calls do
// nothing): after it, reading them, or a string made from them, faults.
// The seals make the mapping safe to hold: the file can neither change
// nor shrink under it.
func (r *Receiver) TakeMapped(ctx context.Context, token, offset, length uint64) (b []byte, release func(), err error) {
	f, err := r.wait(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	return mapSealed(f, offset, length)
}

// wait is the descriptor sent under token, once it has arrived.
func (r *Receiver) wait(ctx context.Context, token uint64) (*os.File, error) {
	r.mu.Lock()
	s := r.slotLocked(token)
	r.mu.Unlock()
	var f *os.File
	select {
	case f = <-s.file:
	case <-ctx.Done():
	case <-r.done:
	}
	r.mu.Lock()
	delete(r.slots, token)
	if f == nil && len(s.file) == 1 {
		(<-s.file).Close() // arrived as the wait ended: nobody will take it
	}
	r.mu.Unlock()
	if f == nil {
		if ctx.Err() != nil {
			return nil, ErrTimeout
		}
		return nil, ErrClosed
	}
	return f, nil
}

// Pending counts descriptors received and not yet taken (for tests and
// diagnostics).
func (r *Receiver) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.slots {
		n += len(s.file)
	}
	return n
}

// Close shuts the channel and drops every descriptor not yet taken.
func (r *Receiver) Close() {
	r.conn.shutdown()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, s := range r.slots {
		if len(s.file) == 1 {
			(<-s.file).Close()
		}
		delete(r.slots, t)
	}
}
