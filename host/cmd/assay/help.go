package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// verbs are the subcommands of each command that has them.
var verbs = map[string][]string{
	"keys":    {"rotate", "secret"},
	"wallet":  {"new"},
	"ledger":  {"report", "fill-fmv", "refund", "export", "reconcile"},
	"service": {"stop", "resume", "status"},
	"store":   {"backup", "restore"},
	"plugins": {"pin", "reprove"},
	"corpus":  {"pin", "check"},
}

// exitUsage is the status of a command line that cannot be run as
// written (an unknown flag, command or verb): the shell's convention.
const exitUsage = 2

// usageError is a command line that cannot be run as written; its text
// carries the command's usage.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// usageOf is the lines of usage for `assay <words...>` (a command, or a
// command and its verb), continuation lines included.
func usageOf(words ...string) string {
	var b strings.Builder
	keep := false
	for _, line := range strings.Split(strings.TrimSuffix(usage, "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "assay" {
			keep = len(f) > len(words)
			for i, w := range words {
				// "pin|check": one line for several verbs
				if keep && !slices.Contains(strings.Split(f[i+1], "|"), w) {
					keep = false
				}
			}
		} else if !strings.HasPrefix(line, "    ") {
			keep = false
		}
		if keep {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// commandHelp answers a command's own --help, or refuses a missing or
// unknown verb, before the command reads any flag, file or store. It
// reports whether it answered.
func commandHelp(args []string) (bool, error) {
	subs, ok := verbs[args[0]]
	if !ok {
		return false, nil
	}
	switch {
	case len(args) > 1 && isHelp(args[1]):
		fmt.Fprintf(os.Stdout, "usage:\n%s", usageOf(args[0]))
		return true, nil
	case len(args) < 2:
		return true, usageError{fmt.Errorf("%s: one of %s\nusage:\n%s", args[0], strings.Join(subs, ", "), usageOf(args[0]))}
	case !slices.Contains(subs, args[1]):
		return true, usageError{fmt.Errorf("%s: unknown command %q (one of %s)\nusage:\n%s", args[0], args[1], strings.Join(subs, ", "), usageOf(args[0]))}
	}
	return false, nil
}

// newFlags is a command's flag set: its usage is the command's lines of
// usage and its flags, on standard output when asked for (-h, --help), on
// standard error after a mistake.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage:\n%sflags:\n", usageOf(strings.Fields(name)...))
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a command's flags: asked for help it prints the usage on
// standard output (flag.ErrHelp: exit 0); a mistake is a usageError.
func parse(fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(os.Stdout)
		}
	}
	err := fs.Parse(args)
	fs.SetOutput(nil)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
	}
	return err
}
