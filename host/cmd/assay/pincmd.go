package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/pluginhost"
)

// pinned is one plugin binary `assay plugins pin` found: its config name
// and kind (from its file name), its pin, and what it serves (a format
// for an adapter, a criteria id for a family; "" when it could not be
// asked).
type pinned struct {
	file, name, kind, sum string
	serves                string
}

// choices are --choose key=binary: which binary serves a format (or a
// criteria id) that several in the folder serve.
type choices map[string]string

func (c choices) String() string { return fmt.Sprint(map[string]string(c)) }

func (c choices) Set(v string) error {
	key, binary, ok := strings.Cut(v, "=")
	if !ok || key == "" || binary == "" {
		return fmt.Errorf("--choose %q: want FORMAT=BINARY or CRITERIA-ID=BINARY", v)
	}
	c[key] = binary
	return nil
}

// pin writes the config that pins every plugin binary in dir: make build
// runs it so the default config always matches the binaries just built.
// It asks each binary what it serves, and refuses a folder where two
// serve one format (or one criteria id) unless --choose names the one:
// which plugin serves a format is the operator's to say, never the order
// of file names.
func pin(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins pin")
	dir := fs.String("dir", "bin", "plugin directory")
	chosen := choices{}
	fs.Var(chosen, "choose", "FORMAT=BINARY or CRITERIA-ID=BINARY: the binary that serves it where several in the folder do (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	names, err := pluginFiles(*dir, stderr)
	if err != nil {
		return err
	}
	var all []pinned
	for _, n := range names {
		sum, err := pluginhost.PinOf(filepath.Join(*dir, n))
		if err != nil {
			return err
		}
		p := pinned{file: n, sum: sum, kind: "family", name: strings.TrimPrefix(n, "assay-")}
		if strings.HasPrefix(p.name, "adapter-") {
			p.kind, p.name = "adapter", strings.TrimPrefix(p.name, "adapter-")
		}
		if p.serves, err = describe(*dir, p); err != nil {
			// stderr: stdout is the config being written
			fmt.Fprintf(stderr, "plugins pin: could not ask %s what it serves (%v): pinned unchecked\n", n, err)
		}
		all = append(all, p)
	}
	keep, dropped, err := choose(all, chosen)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Written by `assay plugins pin`: every plugin beside the host, pinned by SHA-256.\n")
	for _, d := range dropped {
		fmt.Fprintf(&b, "# not pinned: %s, which also serves %s (--choose %s=%s)\n", d.file, d.serves, d.serves, chosen[d.serves])
	}
	for _, p := range keep {
		fmt.Fprintf(&b, "\nplugin %q {\n  kind   = %q\n  path   = %q\n  sha256 = %q\n}\n", p.name, p.kind, p.file, p.sum)
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// pluginFiles are the plugin binaries in dir by the naming rule, sorted;
// what it skips is said on stderr.
func pluginFiles(dir string, stderr io.Writer) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("plugins pin: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		// the host itself and its configs are expected beside the plugins
		why := ""
		switch {
		case n == "assay" || filepath.Ext(n) == ".hcl":
			continue
		case e.IsDir():
			why = "a directory"
		case !strings.HasPrefix(n, "assay-"):
			why = "not named assay-<name> (assay-<family> or assay-adapter-<format>)"
		case filepath.Ext(n) != "":
			why = "its name has an extension (" + filepath.Ext(n) + ")"
		}
		if why != "" {
			fmt.Fprintf(stderr, "plugins pin: skipped %s: %s\n", n, why)
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// describe starts a binary as the host would and asks what it serves: an
// adapter's format, a family's criteria id.
func describe(dir string, p pinned) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := pluginhost.Spec{Name: p.name, Path: p.file, SHA256: p.sum}
	opts := pluginhost.Options{Dir: dir, Env: pluginEnv(), Logger: hclog.NewNullLogger(), StartTimeout: 20 * time.Second}
	if p.kind == "adapter" {
		a, err := pluginhost.StartAdapter(ctx, spec, opts)
		if err != nil {
			return "", err
		}
		defer a.Close()
		return a.Description().GetFormatId(), nil
	}
	f, err := pluginhost.StartFamily(ctx, spec, opts, pluginhost.NewRouter())
	if err != nil {
		return "", err
	}
	defer f.Close()
	return f.Description().GetCriteriaId(), nil
}

// choose keeps one binary per format and per criteria id: the only one,
// or the one --choose names; several without a choice are refused,
// naming them all and the flag that settles it.
func choose(all []pinned, chosen choices) (keep, dropped []pinned, err error) {
	by := map[string][]pinned{}
	for _, p := range all {
		if p.serves != "" {
			by[p.kind+"\x00"+p.serves] = append(by[p.kind+"\x00"+p.serves], p)
		}
	}
	for _, p := range all {
		group := by[p.kind+"\x00"+p.serves]
		if p.serves == "" || len(group) == 1 {
			keep = append(keep, p)
			continue
		}
		want, ok := chosen[p.serves]
		if !ok {
			files := make([]string, len(group))
			for i, g := range group {
				files[i] = g.file
			}
			what := map[string]string{"adapter": "adapt format", "family": "serve criteria"}[p.kind]
			return nil, nil, fmt.Errorf("plugins pin: %s all %s %q: one plugin serves it. Keep one of them in the folder, or choose: "+
				"assay plugins pin --choose %s=%s", strings.Join(files, " and "), what, p.serves, p.serves, files[0])
		}
		if !inGroup(group, want) {
			return nil, nil, fmt.Errorf("plugins pin: --choose %s=%s: that binary does not serve %s here", p.serves, want, p.serves)
		}
		if p.file == want {
			keep = append(keep, p)
		} else {
			dropped = append(dropped, p)
		}
	}
	return keep, dropped, nil
}

func inGroup(group []pinned, file string) bool {
	for _, g := range group {
		if g.file == file {
			return true
		}
	}
	return false
}
