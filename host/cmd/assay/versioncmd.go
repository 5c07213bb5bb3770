package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/assay-audit/assay/host/version"
)

// versionInfo is `assay version --json`: the build an operator reports or
// a script compares with `assay service status`'s VERSION column.
type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// versionCmd is `assay version [--json]`: which build this binary is,
// without a config, a store or a data dir, so that it answers on any
// machine (inside the image too, which has no shell to read a label with).
func versionCmd(args []string, stdout io.Writer) error {
	fs := newFlags("version")
	asJSON := fs.Bool("json", false, "print the version as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("version: takes no arguments")
	}
	info := versionInfo{Version: version.String(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(info)
	}
	_, err := fmt.Fprintf(stdout, "assay %s (%s %s/%s)\n", info.Version, info.Go, info.OS, info.Arch)
	return err
}
