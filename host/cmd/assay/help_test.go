package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/store"
)

// commandLines are the commands and verbs the usage text lists, each as
// its words after "assay".
func commandLines(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	seen := map[string]bool{}
	for _, line := range strings.Split(usage, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "assay" {
			continue
		}
		words := []string{f[1]}
		if verbs[f[1]] != nil {
			for _, v := range strings.Split(f[2], "|") {
				out = append(out, []string{f[1], v})
			}
			if !seen[f[1]] {
				seen[f[1]] = true
				out = append(out, words)
			}
			continue
		}
		out = append(out, words)
	}
	if len(out) < 25 {
		t.Fatalf("the usage text lists %d command lines", len(out))
	}
	return out
}

// Every command and verb answers -h and --help with its own usage on
// standard output and exit 0, before it reads a config, a store or a
// file: the folder it runs in stays empty. An unknown flag prints the
// usage and exits 2, as a missing or unknown verb does.
func TestEveryCommandHelps(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	exec1 := func(dir string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, EnvStore+"=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	for _, words := range commandLines(t) {
		name := "assay " + strings.Join(words, " ")
		for _, ask := range []string{"--help", "-h"} {
			dir := t.TempDir()
			out, errOut, code := exec1(dir, append(append([]string{}, words...), ask)...)
			if code != 0 || !strings.HasPrefix(out, "usage:\n") || !strings.Contains(out, usageOf(words...)) || usageOf(words...) == "" || errOut != "" {
				t.Errorf("%s %s: exit %d\nstdout: %.600s\nstderr: %.300s", name, ask, code, out, errOut)
			}
			if len(words) == 1 && verbs[words[0]] != nil {
				for _, v := range verbs[words[0]] {
					if !strings.Contains(out, name+" "+v) && !strings.Contains(out, v+"|") && !strings.Contains(out, "|"+v) {
						t.Errorf("%s %s names no %s:\n%s", name, ask, v, out)
					}
				}
			} else if !strings.Contains(out, "flags:\n") {
				t.Errorf("%s %s lists no flags:\n%s", name, ask, out)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s %s left %s in the folder it ran in", name, ask, entries[0].Name())
			}
		}
		if len(words) == 1 && verbs[words[0]] != nil {
			for _, bad := range [][]string{words, append(append([]string{}, words...), "no-such-verb")} {
				_, errOut, code := exec1(t.TempDir(), bad...)
				if code != exitUsage || !strings.Contains(errOut, "usage:\n") {
					t.Errorf("assay %s: exit %d, want %d with the usage:\n%s", strings.Join(bad, " "), code, exitUsage, errOut)
				}
			}
			continue
		}
		dir := t.TempDir()
		_, errOut, code := exec1(dir, append(append([]string{}, words...), "--no-such-flag")...)
		if code != exitUsage || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") || !strings.Contains(errOut, "usage:\n") {
			t.Errorf("%s --no-such-flag: exit %d, want %d with the usage:\n%.600s", name, code, exitUsage, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s --no-such-flag left %s in the folder it ran in", name, entries[0].Name())
		}
	}
	for _, ask := range []string{"--help", "-h", "help"} {
		if out, _, code := exec1(t.TempDir(), ask); code != 0 || out != usage {
			t.Errorf("assay %s: exit %d, want the whole usage:\n%s", ask, code, out)
		}
	}
	if _, errOut, code := exec1(t.TempDir(), "no-such-command"); code != exitUsage || !strings.Contains(errOut, "usage:") {
		t.Errorf("an unknown command: exit %d\n%s", code, errOut)
	}
}

// A missing seller wallet names the flag that gives it.
func TestReconcileNamesPayTo(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(context.Background(), "sqlite", data) // a store a host has run on
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	err = run([]string{"ledger", "reconcile", "--data-dir", data, "--solana-rpc", "http://127.0.0.1:1"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--pay-to") || strings.Contains(err.Error(), "no such file") {
		t.Errorf("reconcile without a seller wallet: %v", err)
	}
}
