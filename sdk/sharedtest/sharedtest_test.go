package sharedtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A fake testing.TB records how Read ended without ending this test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = format
	panic(r)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func run(r *recorder, rel string) (b []byte) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	return Read(r, rel)
}

func TestReadSkipsOrFailsOnAMissingFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "present.txt"), []byte("here"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(DirEnv, dir)

	t.Setenv(RequireEnv, "")
	r := &recorder{TB: t}
	if b := run(r, "present.txt"); string(b) != "here" || r.skipped != "" || r.failed != "" {
		t.Fatalf("present file: %q skipped=%q failed=%q", b, r.skipped, r.failed)
	}
	r = &recorder{TB: t}
	run(r, "fixtures/absent.af")
	if !strings.Contains(r.skipped, "beside the checkout") || r.failed != "" {
		t.Errorf("absent file without %s: skipped=%q failed=%q", RequireEnv, r.skipped, r.failed)
	}

	t.Setenv(RequireEnv, "1")
	r = &recorder{TB: t}
	run(r, "fixtures/absent.af")
	if r.failed == "" || r.skipped != "" {
		t.Errorf("absent file with %s=1: skipped=%q failed=%q", RequireEnv, r.skipped, r.failed)
	}
}

// Without the override, shared/ is the folder beside the module root
// (this package is two levels below it).
func TestDirIsBesideTheModule(t *testing.T) {
	t.Setenv(DirEnv, "")
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "..", "..", "..", "shared"); d != want {
		t.Errorf("Dir() = %s, want %s", d, want)
	}
}
