// Package launchproof is what a host proves before it serves a plugin
// set, and the record that it did: each family's corpus, then its custody
// check (a canary planted in every corpus request and searched for in the
// answers, the host's log, the scratch store's rows and the temp dir). A
// family that fails either is not served on this host; one that passes is
// recorded in the store under a key of everything the proof depends on,
// so a restart of the same set, or any other host of the fleet on the
// store, serves it at once instead of proving it again.
package launchproof

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Kinds of proof.
const (
	// KindLaunch is the default proof: the corpus, then the custody check.
	KindLaunch = "launch"
	// KindCanary is assay serve --canary-proof's: every surface searched.
	KindCanary = "canary-proof"
)

// Parts are everything one service's proof depends on: a change in any of
// them is another plugin set, proven before it is served.
type Parts struct {
	Kind string
	// HostBuild is the host binary's SHA-256 (BuildDigest): its handler,
	// self-checks and custody rules are part of what was proven.
	HostBuild string
	// Family is the family plugin's pinned SHA-256.
	Family string
	// Adapters are the pinned SHA-256 of the adapter serving each format
	// the family accepts (format id to digest; a format with no adapter
	// loaded is absent, which is a set of its own).
	Adapters map[string]string
	// The service, its criteria and the corpus pin its criteria name.
	Service, CriteriaID, CriteriaRevision, CorpusPin string
}

// Key is the digest a proof is recorded under: SHA-256 over every part,
// each named, in a fixed order.
func (p Parts) Key() string {
	h := sha256.New()
	field := func(name, value string) { fmt.Fprintf(h, "%s=%d:%s\n", name, len(value), value) }
	field("proof", "assay launch proof 1")
	field("kind", p.Kind)
	field("host", p.HostBuild)
	field("family", p.Family)
	field("service", p.Service)
	field("criteria", p.CriteriaID)
	field("revision", p.CriteriaRevision)
	field("corpus", p.CorpusPin)
	formats := make([]string, 0, len(p.Adapters))
	for f := range p.Adapters {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	for _, f := range formats {
		field("adapter "+f, p.Adapters[f])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BuildDigest is the SHA-256 of the running binary: the host's build as a
// proof depends on it, whatever version string it carries (a build from a
// tree without .git says "unknown", and two such builds differ).
func BuildDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("launchproof: the host binary: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("launchproof: the host binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("launchproof: the host binary: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// short is a key's first 12 hex digits, for a log line.
func short(key string) string { return key[:min(len(key), 12)] }

// joinFirst names up to n items and how many more there are.
func joinFirst(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}
