//go:build linux

package sharedbody

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a channel with both ends in this process: the plugin's end read
// exactly as FromEnv reads an inherited descriptor.
func pair(t *testing.T) (*Sender, *Receiver) {
	t.Helper()
	s, child, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	c := inherited(strconv.Itoa(int(child.Fd())))
	if c == nil {
		t.Fatal("the child's end is not recognised")
	}
	r := newReceiver(c)
	t.Cleanup(func() { s.Close(); r.Close(); child.Close() })
	return s, r
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func randomBody(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// What the plugin reads is what the host wrote, whole or any range of it,
// whatever order bodies are sent and taken in, and no descriptor outlives
// its request on either side.
func TestBodiesArriveIntact(t *testing.T) {
	s, r := pair(t)
	before := openFDs(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	const n = 24
	bodies := make([][]byte, n)
	tokens := make([]uint64, n)
	for i := range bodies {
		bodies[i] = randomBody(rnd, rnd.IntN(1<<20)+1)
		b, err := New(bodies[i])
		if err != nil {
			t.Fatal(err)
		}
		if tokens[i], err = s.Send(b); err != nil {
			t.Fatal(err)
		}
		b.Close() // the host may let go once sent: the plugin holds its own
	}
	offsets := make([]uint64, n)
	for i := 1; i < n; i += 2 {
		offsets[i] = rnd.Uint64N(uint64(len(bodies[i])))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := n - 1; i >= 0; i-- { // taken in reverse, concurrently
		wg.Go(func() {
			body, off := bodies[i], offsets[i]
			length := uint64(len(body)) - off
			// even bodies by a copy, odd ones mapped (at odd offsets)
			var got []byte
			var err error
			if i%2 == 0 {
				got, err = r.Take(context.Background(), tokens[i], off, length)
			} else {
				var release func()
				got, release, err = r.TakeMapped(context.Background(), tokens[i], off, length)
				if err == nil {
					defer release()
					defer release() // a second release does nothing
				}
			}
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, body[off:]) {
				errs <- errors.New("body " + strconv.Itoa(i) + " differs")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r.Pending() != 0 || s.Sent() != n {
		t.Errorf("pending %d, sent %d", r.Pending(), s.Sent())
	}
	if after := openFDs(t); after != before {
		t.Errorf("open descriptors %d before, %d after", before, after)
	}
}

// A plugin may ask before the descriptor arrives; it waits, bounded by its
// deadline. A descriptor that arrives after its taker gave up is closed, as
// is one nobody asks for once it is stale.
func TestTakeWaitsWithinTheDeadline(t *testing.T) {
	s, r := pair(t)
	body := []byte(`{"record":[1,2,3]}`)
	got := make(chan []byte, 1)
	go func() {
		b, err := r.Take(context.Background(), 1, 10, 7)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	time.Sleep(20 * time.Millisecond)
	b, err := New(body)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if tok, err := s.Send(b); err != nil || tok != 1 {
		t.Fatal(tok, err)
	}
	if g := <-got; string(g) != "[1,2,3]" {
		t.Errorf("took %q", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := r.Take(ctx, 99, 0, 1); !errors.Is(err, ErrTimeout) {
		t.Errorf("no descriptor: %v", err)
	}
	// token 2 arrives and is never taken; once stale, the next arrival drops it
	if _, err := s.Send(b); err != nil {
		t.Fatal(err)
	}
	waitPending(t, r, 1)
	r.mu.Lock()
	r.now = func() time.Time { return time.Now().Add(staleAfter + time.Minute) }
	r.mu.Unlock()
	if _, err := s.Send(b); err != nil { // token 3
		t.Fatal(err)
	}
	waitPending(t, r, 1)
	if _, err := r.Take(context.Background(), 3, 0, uint64(len(body))); err != nil {
		t.Errorf("the fresh body: %v", err)
	}
	if r.Pending() != 0 {
		t.Errorf("%d pending after the sweep", r.Pending())
	}
}

func waitPending(t *testing.T, r *Receiver, n int) {
	t.Helper()
	for i := 0; r.Pending() != n; i++ {
		if i == 500 {
			t.Fatalf("pending %d, want %d", r.Pending(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The file is sealed before it leaves the host: nobody holding it can
// change a byte or its size, and a plugin refuses a file that is not
// sealed or a range outside it.
func TestSealsAndRanges(t *testing.T) {
	s, r := pair(t)
	b, err := New([]byte("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("a sealed body was written")
	}
	if err := b.f.Truncate(3); err == nil {
		t.Error("a sealed body was shrunk")
	}
	for _, c := range []struct{ off, n uint64 }{{0, 11}, {11, 0}, {5, 6}, {1, ^uint64(0)}} {
		tok, err := s.Send(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Take(context.Background(), tok, c.off, c.n); !errors.Is(err, ErrRange) {
			t.Errorf("range %d+%d: %v", c.off, c.n, err)
		}
		tok, _ = s.Send(b)
		if _, _, err := r.TakeMapped(context.Background(), tok, c.off, c.n); !errors.Is(err, ErrRange) {
			t.Errorf("mapped range %d+%d: %v", c.off, c.n, err)
		}
	}
	tok, _ := s.Send(b)
	if g, release, err := r.TakeMapped(context.Background(), tok, 10, 0); err != nil || len(g) != 0 {
		t.Errorf("empty mapped range at the end: %q %v", g, err)
	} else {
		release()
	}
	tok, _ = s.Send(b)
	if g, err := r.Take(context.Background(), tok, 10, 0); err != nil || len(g) != 0 {
		t.Errorf("empty range at the end: %q %v", g, err)
	}
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	unsealed := &Body{f: os.NewFile(uintptr(fd), "unsealed"), n: 0}
	defer unsealed.Close()
	tok, err = s.Send(unsealed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Take(context.Background(), tok, 0, 0); !errors.Is(err, ErrUnsealed) {
		t.Errorf("unsealed: %v", err)
	}
	if tok, err = s.Send(unsealed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.TakeMapped(context.Background(), tok, 0, 0); !errors.Is(err, ErrUnsealed) {
		t.Errorf("unsealed, mapped: %v", err)
	}
}

// A mapped take allocates nothing the size of the body: the plugin reads
// the host's pages, where Take allocates and fills a buffer of its own.
func TestTakeMappedCopiesNothing(t *testing.T) {
	s, r := pair(t)
	body := randomBody(rand.New(rand.NewPCG(3, 4)), 5<<20)
	b, err := New(body)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	allocated := func(take func(tok uint64)) uint64 {
		tok, err := s.Send(b)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		take(tok)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	copied := allocated(func(tok uint64) {
		if got, err := r.Take(context.Background(), tok, 1, uint64(len(body))-1); err != nil || !bytes.Equal(got, body[1:]) {
			t.Errorf("take: %v", err)
		}
	})
	mapped := allocated(func(tok uint64) {
		got, release, err := r.TakeMapped(context.Background(), tok, 1, uint64(len(body))-1)
		if err != nil || !bytes.Equal(got, body[1:]) {
			t.Fatalf("mapped take: %v", err)
		}
		release()
	})
	if copied < uint64(len(body))-1 || mapped > 64<<10 {
		t.Errorf("allocated %d bytes by a copy, %d mapped, for a body of %d", copied, mapped, len(body))
	}
}

// Read takes a body from a stream into a sealed file: exactly what the
// stream held, cut at one byte over the limit so an oversized body shows
// by its length; a stream that fails leaves no file open.
func TestReadFromAStream(t *testing.T) {
	s, r := pair(t)
	before := openFDs(t)
	rnd := rand.New(rand.NewPCG(3, 4))
	body := randomBody(rnd, 5<<20)
	for _, c := range []struct {
		name  string
		limit int64
		want  []byte
	}{
		{"under the limit", 6 << 20, body},
		{"at the limit", 5 << 20, body},
		{"over the limit", 5<<20 - 10, body[:5<<20-9]},
		{"empty", 10, nil},
	} {
		src := body
		if c.want == nil {
			src = nil
		}
		b, err := Read(iotest.HalfReader(bytes.NewReader(src)), c.limit)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b.Len() != int64(len(c.want)) {
			t.Errorf("%s: length %d, want %d", c.name, b.Len(), len(c.want))
		}
		if _, err := b.f.WriteAt([]byte("x"), 0); err == nil {
			t.Errorf("%s: the file is not sealed", c.name)
		}
		tok, err := s.Send(b)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		got, err := r.Take(context.Background(), tok, 0, uint64(len(c.want)))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: read back %d bytes, %v", c.name, len(got), err)
		}
	}
	broken := io.MultiReader(bytes.NewReader(body[:1000]), iotest.ErrReader(io.ErrUnexpectedEOF))
	if _, err := Read(broken, 5<<20); !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, ErrSource) {
		t.Errorf("a failing stream: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open descriptors %d before, %d after", before, after)
	}
}

// Whatever arrives malformed (no descriptor, two, a short token) is
// dropped, descriptors closed, and the channel goes on.
func TestMalformedMessagesAreDropped(t *testing.T) {
	s, r := pair(t)
	before := openFDs(t)
	b, err := New([]byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	fd := int(b.f.Fd())
	for _, m := range []struct {
		payload []byte
		rights  []byte
	}{
		{putToken(7), nil},
		{putToken(7), unix.UnixRights(fd, fd)},
		{putToken(7)[:4], unix.UnixRights(fd)},
		{append(putToken(7), 0), unix.UnixRights(fd)},
	} {
		if err := unix.Sendmsg(s.fd, m.payload, m.rights, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := s.Send(b)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := r.Take(context.Background(), tok, 0, 4); err != nil || string(g) != "body" {
		t.Errorf("after the malformed: %q %v", g, err)
	}
	b.Close()
	if r.Pending() != 0 {
		t.Errorf("%d pending", r.Pending())
	}
	if after := openFDs(t); after != before {
		t.Errorf("open descriptors %d before, %d after", before, after)
	}
}

// A closed host end stops the plugin's receiver: a waiting Take returns,
// and a send on a closed sender or of a closed body is refused.
func TestClosing(t *testing.T) {
	s, r := pair(t)
	got := make(chan error, 1)
	go func() {
		_, err := r.Take(context.Background(), 5, 0, 1)
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	s.Close()
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Errorf("take after the host closed: %v", err)
	}
	b, err := New([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(b); !errors.Is(err, ErrClosed) {
		t.Errorf("send on a closed sender: %v", err)
	}
	s2, _ := pair(t)
	b.Close()
	if _, err := s2.Send(b); !errors.Is(err, ErrClosed) {
		t.Errorf("send of a closed body: %v", err)
	}
	if _, err := b.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrClosed) {
		t.Errorf("read of a closed body: %v", err)
	}
}

// Only an inherited sequenced-packet socket is taken for the channel.
func TestFromEnvRefusesAnythingElse(t *testing.T) {
	for _, v := range []string{"", "x", "-1", "0", "2", "999"} {
		if inherited(v) != nil {
			t.Errorf("%q accepted", v)
		}
	}
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if inherited(strconv.Itoa(int(f.Fd()))) != nil {
		t.Error("a file accepted as the channel")
	}
	t.Setenv(EnvFD, "")
	if FromEnv() != nil {
		t.Error("a channel without the variable")
	}
}

// BenchmarkFiveMiB is one body at the cap from the host's bytes to the
// plugin's buffer: the memfd written and sealed, the descriptor passed, the
// range read (both ends in one process, so the figure is the work, not
// the scheduling between two).
func BenchmarkFiveMiB(b *testing.B) {
	s, child, err := Pair()
	if err != nil {
		b.Fatal(err)
	}
	r := newReceiver(inherited(strconv.Itoa(int(child.Fd()))))
	defer func() { s.Close(); r.Close(); child.Close() }()
	body := bytes.Repeat([]byte("x"), 5<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		sb, err := New(body)
		if err != nil {
			b.Fatal(err)
		}
		tok, err := s.Send(sb)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Take(context.Background(), tok, 0, uint64(len(body))); err != nil {
			b.Fatal(err)
		}
		sb.Close()
	}
}

// BenchmarkReadFiveMiB is the host's side alone: a 5 MiB body read from a
// stream (here a reader over memory, standing for the connection) into a
// new sealed file, as the host does for each request.
func BenchmarkReadFiveMiB(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 5<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		sb, err := Read(bytes.NewReader(body), 5<<20)
		if err != nil {
			b.Fatal(err)
		}
		if sb.Len() != int64(len(body)) {
			b.Fatalf("read %d bytes", sb.Len())
		}
		sb.Close()
	}
}
