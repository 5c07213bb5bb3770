// Package version names the build of the running binary, so that hosts
// of different builds on one store (a rolling upgrade) can be told apart.
package version

import (
	"runtime/debug"
)

// stamped is the version given at link time (`make build` sets it with
// -ldflags "-X github.com/assay-audit/assay/host/version.stamped=...",
// from ASSAY_VERSION or git describe). The build info alone is not
// enough: this project's GOFLAGS carries -buildvcs=false, and the
// container build leaves .git out of its context, so neither records a
// revision and such a binary would call itself "unknown". It is written
// by the linker only, never at run time.
var stamped string

// String is the build's version: the one stamped at link time when there
// is one; else the module version when it was built as a module; else its
// VCS revision (12 hex digits, "+dirty" for a tree with uncommitted
// changes); else "unknown".
func String() string {
	if stamped != "" {
		return stamped
	}
	return fromBuildInfo()
}

// fromBuildInfo is the version the toolchain recorded, for a binary built
// without a stamp (go install, go run, a plain go build).
func fromBuildInfo() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "unknown"
	}
	return rev + dirty
}
