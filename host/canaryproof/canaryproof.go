// Package canaryproof is the operator's launch precondition behind
// `assay serve --canary-proof`: a unique canary string (sdk/canary) is
// planted in every string of every corpus request of every family (and in
// paths, queries and headers), sent through every route, and then every
// surface the host controls (its log, its data dir, its store, its
// metrics, the temp dir) is searched for it, its base64 and its SHA-256.
// A trace anywhere refuses the launch. Every answer is searched too,
// outside the members whose values the family's criteria let it print as
// submitted. The host's own canary test (host/server) is the model; this
// is the generic version an operator runs against the binaries they
// deploy, knowing nothing of any family.
package canaryproof

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/assay-audit/assay/sdk/canary"
)

// Canary is a canary (sdk/canary) with the host's surfaces to search.
type Canary struct{ *canary.Canary }

// Finding is a trace of the canary on a surface.
type Finding = canary.Finding

// Request is one planted request.
type Request = canary.Request

// New makes a fresh canary.
func New() (*Canary, error) {
	c, err := canary.New()
	if err != nil {
		return nil, err
	}
	return &Canary{c}, nil
}

// Send sends requests to h in process, each from its own client address,
// with the canary in the query and a header too. It returns the statuses
// seen and a finding for each answer that carries the canary outside the
// members exempt names: the members whose values the family's criteria
// let it print as the submitter wrote them (its tripwires' exempt
// members: labels, record ids, scopes). A family that copies any other
// submitted string into an answer (a report, a refusal, a pre-check)
// fails the proof.
func (c *Canary) Send(ctx context.Context, h http.Handler, reqs []Request, exempt []string) (map[int]int, []Finding) {
	statuses := map[int]int{}
	var findings []Finding
	for i, r := range reqs {
		if ctx.Err() != nil {
			break
		}
		req := httptest.NewRequestWithContext(ctx, r.Method, r.Path+"?q="+c.Value, bytes.NewReader(r.Body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Note", c.Value)
		req.RemoteAddr = fmt.Sprintf("[fd00:ca:a5::%x]:4402", i+1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		statuses[rec.Code]++
		// the request's path is the corpus's (a synthetic case), or the
		// canary's own: either names the surface without a submitted byte
		surface := fmt.Sprintf("the answer to %s %s (%d)", r.Method, pathOf(r.Path, c.Value), rec.Code)
		findings = append(findings, c.Scan(surface, canary.WithoutMembers(rec.Body.Bytes(), exempt))...)
		for name, vals := range rec.Header() {
			findings = append(findings, c.Scan(surface+", header "+name, []byte(strings.Join(vals, "\n")))...)
		}
	}
	return statuses, findings
}

// pathOf is a request path fit to name in a finding: the canary's own
// path segment is named as such.
func pathOf(path, canary string) string { return strings.ReplaceAll(path, canary, "<canary>") }

// ScanDir searches every regular file under dir (modified since, when
// since is not zero: the temp dir is shared with other programs).
func (c *Canary) ScanDir(dir string, since time.Time) []Finding {
	var out []Finding
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: another program's
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 256<<20 || !since.IsZero() && info.ModTime().Before(since) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil {
			out = append(out, c.Scan("file "+path, data)...)
		}
		return nil
	})
	return out
}
