// Package version names the build of the running binary, so that hosts
// of different builds on one store (a rolling upgrade) can be told apart.
package version

import (
	"runtime/debug"
)

// String is the build's version: the module version when it was built as
// a module, else its VCS revision (12 hex digits, "+dirty" for a tree with
// uncommitted changes), else "unknown".
func String() string {
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
