package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/config"
)

// The password file's content lands on the postgres URL as its password,
// whatever characters it holds, and nothing else of the URL changes; each
// refusal is static text that names neither the URL nor the password.
func TestStorePasswordFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "postgres://assay@postgres:5432/assay?search_path=assay&sslmode=disable"
	for _, c := range []struct{ content, want string }{
		{"s3cret\n", "s3cret"},
		{"s3cret", "s3cret"},
		{"s3cret\r\n", "s3cret"},
		{"p@ss:w/o?r#d% ", "p@ss:w/o?r#d% "}, // URL-special characters survive the round trip
	} {
		got, err := storeWithPassword(base, write("pw", c.content))
		if err != nil {
			t.Fatalf("%q: %v", c.content, err)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("%q: the URL made does not parse: %v", c.content, err)
		}
		if pw, _ := u.User.Password(); pw != c.want || u.User.Username() != "assay" {
			t.Errorf("%q: user %q password %q, want assay and %q", c.content, u.User.Username(), pw, c.want)
		}
		if u.Host != "postgres:5432" || u.Path != "/assay" || u.Query().Get("search_path") != "assay" || u.Query().Get("sslmode") != "disable" {
			t.Errorf("%q: the rest of the URL changed: host %q path %q query %q", c.content, u.Host, u.Path, u.RawQuery)
		}
	}
	if got, err := storeWithPassword(base, ""); err != nil || got != base {
		t.Errorf("no password file: %q, %v; want the store as given", got, err)
	}
	if got, err := storeWithPassword("postgresql://assay@db/assay", write("pw", "x\n")); err != nil || !strings.HasPrefix(got, "postgresql://assay:x@db/") {
		t.Errorf("postgresql:// scheme: %q, %v", got, err)
	}

	const secret = "hunter2-very-secret"
	good := write("good", secret+"\n")
	for _, c := range []struct{ spec, file, says string }{
		{"", good, "not a postgres:// URL"},
		{"sqlite", good, "not a postgres:// URL"},
		{"sqlite:/var/lib/assay/assay.db", good, "not a postgres:// URL"},
		{"postgres://assay:" + secret + "@pg.internal/assay", good, "has a password already"},
		{"postgres://assay@pg.internal/assay?password=" + secret, good, "has a password already"},
		{"postgres://pg.internal/assay", good, "names no user"},
		{"postgres://assay@pg.internal:bad port/assay-" + secret, good, "does not parse"},
		{base, filepath.Join(dir, "missing-"+secret), "cannot open the file: no such file"},
		{base, write("empty", "\n"), "the file is empty"},
		{base, write("two", secret+"\nmore\n"), "more than one line"},
		{base, write("big", strings.Repeat("x", maxStorePassword+1)), "longer than 1024 bytes"},
	} {
		got, err := storeWithPassword(c.spec, c.file)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("store %q, file %q: %q, %v; want an error saying %q", c.spec, filepath.Base(c.file), got, err, c.says)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "pg.internal") || strings.Contains(err.Error(), dir) {
			t.Errorf("store %q: the error echoes the URL, the file or the password: %v", c.spec, err)
		}
	}
	if os.Getuid() != 0 { // root reads any file: the refusal cannot be made
		locked := write("locked", secret)
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := storeWithPassword(base, locked); err == nil || !strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), dir) {
			t.Errorf("an unreadable password file: %v, want permission denied without the path", err)
		}
	}
}

// The password file reaches every command through loadConfig, so `docker
// compose exec … assay service status` finds the same store as serve.
func TestStorePasswordFileFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	pw, cfgPath := filepath.Join(dir, "pg_password"), filepath.Join(dir, "assay.hcl")
	if err := os.WriteFile(pw, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvStore, "postgres://assay@db:5432/assay?search_path=assay")
	t.Setenv(EnvStorePasswordFile, pw)
	none := func(*config.Config) map[*string]*string { return nil }
	cfg, err := loadConfig(cfgPath, none)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Store)
	if err != nil {
		t.Fatal("the store after loadConfig does not parse")
	}
	if p, _ := u.User.Password(); p != "from-a-file" {
		t.Error("the store after loadConfig has not the file's password")
	}
	sqlite := "sqlite"
	_, err = loadConfig(cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{&sqlite: &c.Store}
	})
	if err == nil || !strings.Contains(err.Error(), "not a postgres:// URL") {
		t.Errorf("--store sqlite with %s set: %v, want a refusal", EnvStorePasswordFile, err)
	}
}
