package sharedbody

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// seals forbid every change to the file's bytes or size, and any later
// change to the seals themselves.
const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL

// Body is one request body in a sealed in-memory file, held by the host
// from its arrival to the end of the request.
type Body struct {
	n int64
	// mu keeps the descriptor open while it is sent or read: a request
	// ending mid-send must not close it, or its number could name another
	// file by the time sendmsg reads it.
	mu     sync.RWMutex
	f      *os.File
	closed bool
}

// New copies b into a new sealed in-memory file.
func New(b []byte) (*Body, error) {
	return fill(func(f *os.File) (int64, error) {
		n, err := f.Write(b)
		return int64(n), err
	})
}

// Read copies r into a new sealed in-memory file, at most limit+1 bytes
// (one more than a cap, so the caller tells an oversized body apart by
// Len): a host can take a request body straight from the connection into
// the file, without holding it in its own heap. A failure of r is
// ErrSource; ErrUnsupported means nothing was read from r.
func Read(r io.Reader, limit int64) (*Body, error) {
	return fill(func(f *os.File) (int64, error) {
		// a large buffer: a 5 MiB body in 80 writes, not 160
		return io.CopyBuffer(onlyWriter{f}, sourceReader{io.LimitReader(r, limit+1)}, make([]byte, 64<<10))
	})
}

// sourceReader marks its reader's failures as ErrSource.
type sourceReader struct{ io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.Reader.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", ErrSource, err)
	}
	return n, err
}

// onlyWriter hides the file's ReadFrom, which would copy through a 32 KiB
// buffer of its own after trying splice and copy_file_range (neither takes
// an HTTP body).
type onlyWriter struct{ io.Writer }

// fill creates the file, lets write fill it, and seals it.
func fill(write func(*os.File) (int64, error)) (*Body, error) {
	fd, err := unix.MemfdCreate("assay-body", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		// a sandbox that refuses memfd: the caller sends bytes instead
		return nil, fmt.Errorf("%w: memfd: %w", ErrUnsupported, err)
	}
	f := os.NewFile(uintptr(fd), "assay-body")
	n, err := write(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("shared body: fill: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("shared body: seal: %w", err)
	}
	return &Body{f: f, n: n}, nil
}

// Len is the body's size in bytes.
func (b *Body) Len() int64 { return b.n }

// ReadAt reads part of the body (the host's fallback for a plugin that
// takes bodies inline).
func (b *Body) ReadAt(p []byte, off int64) (int, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, ErrClosed
	}
	return b.f.ReadAt(p, off)
}

// Close releases the host's descriptor; the memory goes with the last one
// (a plugin still reading holds its own).
func (b *Body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.f.Close()
}

// Sender is the host's end of one plugin process's channel.
type Sender struct {
	mu     sync.Mutex
	fd     int
	closed bool
	next   atomic.Uint64
	sent   atomic.Int64
}

// Pair opens a channel: the host keeps the Sender and passes child to the
// plugin process (exec.Cmd.ExtraFiles), naming it in the plugin's
// environment with Env; the host closes child once the process started.
func Pair() (*Sender, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("shared body: socketpair: %w", err)
	}
	return &Sender{fd: fds[0]}, os.NewFile(uintptr(fds[1]), "assay-shared-body"), nil
}

// Env is the environment entry naming the child's end as the first of
// exec.Cmd.ExtraFiles (descriptor 3).
func Env() string { return EnvFD + "=3" }

// Send passes the body's descriptor under a new token and returns it.
func (s *Sender) Send(b *Body) (uint64, error) {
	token := s.next.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, ErrClosed
	}
	for {
		err := unix.Sendmsg(s.fd, putToken(token), unix.UnixRights(int(b.f.Fd())), nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("shared body: send: %w", err)
		}
		s.sent.Add(1)
		return token, nil
	}
}

// Sent counts the descriptors passed (for tests and diagnostics).
func (s *Sender) Sent() int64 { return s.sent.Load() }

// Close closes the host's end; the plugin's receiver then stops.
func (s *Sender) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return unix.Close(s.fd)
}

type unixConn struct {
	fd   int
	once sync.Once
}

func inherited(v string) conn {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	if t, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || t != unix.SOCK_SEQPACKET {
		return nil
	}
	unix.CloseOnExec(fd)
	return &unixConn{fd: fd}
}

func (c *unixConn) recv() (uint64, *os.File, error) {
	var buf [tokenBytes + 1]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(c.fd, buf[:], oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("shared body: receive: %w", err)
		}
		if n == 0 && oobn == 0 {
			return 0, nil, ErrClosed
		}
		var fds []int
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for i := range msgs {
				if more, err := unix.ParseUnixRights(&msgs[i]); err == nil {
					fds = append(fds, more...)
				}
			}
		}
		if n != tokenBytes || len(fds) != 1 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return 0, nil, errSkip
		}
		return binary.LittleEndian.Uint64(buf[:tokenBytes]), os.NewFile(uintptr(fds[0]), "assay-body"), nil
	}
}

func (c *unixConn) shutdown() {
	c.once.Do(func() { _ = unix.Shutdown(c.fd, unix.SHUT_RDWR) })
}

// checkSealed checks that f is sealed and holds the range.
func checkSealed(f *os.File, offset, length uint64) error {
	got, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || got&seals != seals {
		return ErrUnsealed
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("shared body: stat: %w", err)
	}
	size := uint64(st.Size)
	if offset > size || length > size-offset {
		return ErrRange
	}
	return nil
}

// mapSealed maps a range of a file the host sealed, read-only and shared.
// A mapping starts on a page boundary, so the page holding offset is
// mapped from its start and the range sliced out of it.
func mapSealed(f *os.File, offset, length uint64) ([]byte, func(), error) {
	if err := checkSealed(f, offset, length); err != nil {
		return nil, nil, err
	}
	if length == 0 {
		return []byte{}, func() {}, nil
	}
	page := uint64(os.Getpagesize())
	start := offset &^ (page - 1)
	m, err := unix.Mmap(int(f.Fd()), int64(start), int(offset-start+length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("shared body: map: %w", err)
	}
	var once sync.Once
	return m[offset-start:][:length:length], func() { once.Do(func() { _ = unix.Munmap(m) }) }, nil
}

// readSealed reads a range of a file the host sealed: the seals are what
// make the bytes read here the bytes the host received.
func readSealed(f *os.File, offset, length uint64) ([]byte, error) {
	if err := checkSealed(f, offset, length); err != nil {
		return nil, err
	}
	out := make([]byte, length)
	if _, err := f.ReadAt(out, int64(offset)); err != nil {
		return nil, fmt.Errorf("shared body: read: %w", err)
	}
	return out, nil
}
