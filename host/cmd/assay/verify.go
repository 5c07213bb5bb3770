package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/signing"
)

// verify is `assay verify`: an answer's signature against a host's keys
// and, with --submission, its facts against the plugins it names.
func verify(args []string, stdout io.Writer) error {
	fs := newFlags("verify")
	keysRef := fs.String("keys", "http://127.0.0.1:8402/keys", "JWKS file or URL")
	submission := fs.String("submission", "", "the request body the report was issued for: run the plugins the report names on it, offline, and compare every fact")
	pluginDir := fs.String("plugins", "", "with --submission: the folder of plugin binaries (default: the folder this assay binary is in)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("verify: name one answer file, or - for standard input")
	}
	keysGiven := false
	fs.Visit(func(f *flag.Flag) { keysGiven = keysGiven || f.Name == "keys" })
	var answer []byte
	var err error
	if fs.Arg(0) == "-" {
		answer, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	} else {
		answer, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return fmt.Errorf("verify: read answer: %w", err)
	}
	// with a submission the check is offline: the signature is checked
	// when keys are named, and said to be unchecked otherwise
	if *submission == "" || keysGiven {
		jwks, err := readKeys(*keysRef)
		if err != nil {
			return err
		}
		kid, err := signing.Verify(answer, jwks)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if _, err := fmt.Fprintf(stdout, "signature valid: key %s\n", kid); err != nil {
			return err
		}
	}
	if *submission == "" {
		return nil
	}
	if !keysGiven {
		fmt.Fprintln(stdout, "signature not checked (name the host's keys with --keys to check it too)")
	}
	body, err := os.ReadFile(*submission)
	if err != nil {
		return fmt.Errorf("verify: read submission: %w", err)
	}
	dir := *pluginDir
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("verify: the plugin folder: %w", err)
		}
		dir = filepath.Dir(exe)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return verifySubmission(ctx, answer, body, dir, stdout)
}

func readKeys(ref string) ([]byte, error) {
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get(ref)
		if err != nil {
			return nil, fmt.Errorf("verify: fetch keys: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("verify: fetch keys: status %d", resp.StatusCode)
		}
		return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	raw, err := os.ReadFile(ref)
	if err != nil {
		return nil, fmt.Errorf("verify: read keys: %w", err)
	}
	return raw, nil
}
