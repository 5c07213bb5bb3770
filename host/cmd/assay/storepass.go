package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
)

// EnvStorePasswordFile names a file holding the PostgreSQL store's
// password, so the password is in neither a command line nor an
// environment variable, both of which `ps`, `docker inspect` and crash
// reports show.
const EnvStorePasswordFile = "ASSAY_STORE_PASSWORD_FILE"

// maxStorePassword bounds the read: a password file that is larger is
// the wrong file, and reading it whole would be the mistake's cost.
const maxStorePassword = 1024

// storeWithPassword returns the store spec with the password read from
// passwordFile set on its URL; an empty passwordFile leaves spec as it is.
// It refuses a store that is not a postgres:// URL (the operator meant
// another store than the one in force) and a URL that carries a password
// already (two sources would leave it unclear which is in force). Its
// errors are static text: both the URL and the file hold the secret.
func storeWithPassword(spec, passwordFile string) (string, error) {
	if passwordFile == "" {
		return spec, nil
	}
	const name = EnvStorePasswordFile
	if !strings.HasPrefix(spec, "postgres://") && !strings.HasPrefix(spec, "postgresql://") {
		return "", errors.New(name + " is set but the store is not a postgres:// URL (set ASSAY_STORE, --store or the config's store to one)")
	}
	u, err := url.Parse(spec)
	if err != nil {
		// url's error quotes the URL, which may hold other credentials
		return "", errors.New("the store's postgres:// URL does not parse")
	}
	if u.User == nil || u.User.Username() == "" {
		return "", errors.New(name + " is set but the store's URL names no user (postgres://USER@host/db)")
	}
	if _, has := u.User.Password(); has || u.Query().Has("password") {
		return "", errors.New(name + " is set but the store's URL has a password already: give it in one place")
	}
	password, err := readStorePassword(passwordFile)
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String(), nil
}

// readStorePassword reads a password file as `docker compose` secrets and
// `echo pw > file` write it: one line, its newline not part of it.
func readStorePassword(path string) (string, error) {
	const name = EnvStorePasswordFile
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf(name+": cannot open the file: %w", pathCause(err))
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxStorePassword+1))
	if err != nil {
		return "", fmt.Errorf(name+": cannot read the file: %w", pathCause(err))
	}
	if len(raw) > maxStorePassword {
		return "", fmt.Errorf(name+": the file is longer than %d bytes: not a password", maxStorePassword)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r")
	if pw == "" {
		return "", errors.New(name + ": the file is empty")
	}
	if strings.ContainsAny(pw, "\r\n") {
		return "", errors.New(name + ": the file has more than one line")
	}
	return pw, nil
}

// pathCause is the system's reason ("permission denied") without the
// path an *fs.PathError adds, so the error stays the same text wherever
// the file is.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
