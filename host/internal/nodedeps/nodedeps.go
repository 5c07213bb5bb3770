// Package nodedeps installs a test's node packages from their lockfile
// (npm ci) when they are missing. Test binaries of several packages run
// at once and share these folders, so the install holds an OS file lock:
// the first installs, the others wait for it and find the packages there.
package nodedeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Install makes sure dir/node_modules holds module, running npm ci in dir
// under the folder's lock when it does not; a failed install fails tb.
func Install(tb testing.TB, dir, module string) {
	tb.Helper()
	// always under the lock: a half-done install by another binary must
	// not pass for a whole one
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		tb.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if have(dir, module) {
		return
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

func have(dir, module string) bool {
	_, err := os.Stat(filepath.Join(dir, "node_modules", module, "package.json"))
	return err == nil
}
