package dirlock

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A second holder is refused and told who holds the dir; once the first
// lets go, the dir can be taken again.
func TestOneHolderAtATime(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir, "listening on 127.0.0.1:8402")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir, "listening on 127.0.0.1:8403")
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "listening on 127.0.0.1:8402") || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second holder: %v", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir, "again")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	_ = again.Release()
}

// The kernel lets the dir go when its holder is killed with SIGKILL.
func TestSIGKILLReleases(t *testing.T) {
	if os.Getenv("DIRLOCK_HOLD") != "" {
		if _, err := Acquire(os.Getenv("DIRLOCK_HOLD"), "child"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSIGKILLReleases$")
	cmd.Env = append(os.Environ(), "DIRLOCK_HOLD="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	if _, err := Acquire(dir, "parent"); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "child") {
		t.Fatalf("while the child holds it: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l, err := Acquire(dir, "parent")
	if err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}
	_ = l.Release()
}
