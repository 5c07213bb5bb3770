// Package sharedtest reads the material the project keeps outside the
// repository, in shared/ beside the checkout: the published criteria
// documents and real data files (Letta agent files). A clone of the
// repository alone has no shared/, and its `make test` must still pass, so
// a test that needs a file skips with one line naming what is missing and
// where to put it. CI has shared/ and sets ASSAY_REQUIRE_SHARED=1, which
// turns that skip into a failure: a check that silently stopped running
// would otherwise look green.
package sharedtest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv names the variable that makes a missing file a failure.
const RequireEnv = "ASSAY_REQUIRE_SHARED"

// DirEnv names the variable that points at shared/ elsewhere.
const DirEnv = "ASSAY_SHARED"

// rootModule is the repository's root module, beside whose folder
// shared/ lives.
const rootModule = "github.com/assay-audit/assay"

// Dir is shared/ beside the checkout that holds the working directory (the
// folder with the root module's go.mod, walking up), or $ASSAY_SHARED
// when set.
func Dir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	// the repository's root module, past the sdk's own go.mod (the sdk is
	// a module of its own inside the repository)
	for d := wd; ; {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module "+rootModule+"\n")) {
			return filepath.Join(filepath.Dir(d), "shared"), nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("no go.mod of " + rootModule + " above the working directory")
		}
		d = up
	}
}

// Read returns shared/<rel> (rel uses slashes, e.g.
// "fixtures/letta/loop.af"). Where the file is missing it skips the test,
// or fails it under ASSAY_REQUIRE_SHARED=1; any other read error fails.
func Read(t testing.TB, rel string) []byte {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatalf("locating shared/: %v", err)
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		return b
	case errors.Is(err, fs.ErrNotExist) && os.Getenv(RequireEnv) == "":
		t.Skipf("needs %s: put the project's shared/ folder beside the checkout (or set %s)", path, DirEnv)
	case errors.Is(err, fs.ErrNotExist):
		t.Fatalf("%s=1 and %s is missing", RequireEnv, path)
	default:
		t.Fatalf("reading %s: %v", path, err)
	}
	return nil
}
