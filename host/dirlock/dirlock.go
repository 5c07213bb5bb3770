// Package dirlock holds a host's data dir for it alone. The dir keeps the
// host id that names the host's payment-claim leases (a host that starts
// releases the leases its id held before), its SQLite store and its keys:
// two hosts on one dir would take each other's claims. The lock is an OS
// file lock, so the kernel releases it when the holder exits, however it
// exits (SIGKILL included): no stale lock to clear by hand.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FileName is the lock file inside the data dir.
const FileName = "host.lock"

// ErrHeld is a data dir another running host holds.
var ErrHeld = errors.New("the data dir is held by another running host: give each host a data dir of its own")

// Lock is a held data dir.
type Lock struct{ f *os.File }

// Acquire takes dir for this process, creating it if needed, and writes
// who holds it (pid and what the caller says of itself) into the lock
// file. Held by another process: an error wrapping ErrHeld that names the
// holder.
func Acquire(dir, holder string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dirlock: data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dirlock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who, _ := os.ReadFile(path)
			return nil, fmt.Errorf("%w (%s holds %s: %s)", ErrHeld, FileName, absDir(dir), strings.TrimSpace(string(who)))
		}
		return nil, fmt.Errorf("dirlock: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, %s\n", os.Getpid(), holder)), 0)
	}
	return &Lock{f: f}, nil
}

// Release lets the dir go (exiting does too).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the last descriptor drops the flock
	l.f = nil
	return err
}

func absDir(d string) string {
	if a, err := filepath.Abs(d); err == nil {
		return a
	}
	return d
}
