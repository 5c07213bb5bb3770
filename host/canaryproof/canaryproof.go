// Package canaryproof is the operator's launch precondition behind
// `assay serve --canary-proof`: a unique canary string is planted in every
// string of every corpus request of every family (and in paths, queries
// and headers), sent through every route, and then every surface the host
// controls (its log, its data dir, its store, its metrics, the temp dir)
// is searched for it, its base64 and its SHA-256. A trace anywhere refuses
// the launch. Every answer is searched too, outside the members whose
// values the family's criteria let it print as submitted. The host's own canary test (host/server) is the model; this
// is the generic version an operator runs against the binaries they
// deploy, knowing nothing of any family.
package canaryproof

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/selftest"
)

// Canary is one unique string and every form of it a leak could take.
type Canary struct {
	Value string
	// forms are searched for as they are: the canary, its base64, its
	// SHA-256 (hex, base64, base64url)
	forms map[string]string
	// digests are the SHA-256 forms of every planted body, found as
	// whole tokens (hundreds of bodies: a search for each would be slow)
	digests map[string]string
}

// New makes a fresh canary.
func New() (*Canary, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	c := &Canary{Value: "CANARY" + hex.EncodeToString(b), forms: map[string]string{}, digests: map[string]string{}}
	c.Add("raw", []byte(c.Value))
	return c, nil
}

// addDigests registers a planted body's SHA-256 forms.
func (c *Canary) addDigests(label string, b []byte) {
	sum := sha256.Sum256(b)
	c.digests[hex.EncodeToString(sum[:])] = label + " sha256 hex"
	c.digests[base64.StdEncoding.EncodeToString(sum[:])] = label + " sha256 base64"
	c.digests[base64.RawURLEncoding.EncodeToString(sum[:])] = label + " sha256 base64url"
}

// Add registers a submitted byte string: itself, its base64 (standard and
// URL alphabets) and its SHA-256 (hex, base64, base64url).
func (c *Canary) Add(label string, b []byte) {
	sum := sha256.Sum256(b)
	c.forms[label] = string(b)
	c.forms[label+" base64"] = base64.StdEncoding.EncodeToString(b)
	c.forms[label+" base64url"] = base64.RawURLEncoding.EncodeToString(b)
	c.forms[label+" sha256 hex"] = hex.EncodeToString(sum[:])
	c.forms[label+" sha256 base64"] = base64.StdEncoding.EncodeToString(sum[:])
	c.forms[label+" sha256 base64url"] = base64.RawURLEncoding.EncodeToString(sum[:])
}

// Find names every form of the canary data holds.
func (c *Canary) Find(data []byte) []string {
	seen := map[string]bool{}
	for label, form := range c.forms {
		if len(form) >= 8 && bytes.Contains(data, []byte(form)) {
			seen[label] = true
		}
	}
	// digests: every maximal run of hex digits 64 long, and of base64
	// characters ('=' apart) 43 long, is looked up
	for _, t := range []struct {
		in   func(byte) bool
		size int
	}{{isHex, 64}, {isBase64, 43}} {
		for i := 0; i < len(data); {
			j := i
			for j < len(data) && t.in(data[j]) {
				j++
			}
			if j-i == t.size {
				tok := string(data[i:j])
				if label, ok := c.digests[tok]; ok {
					seen[label] = true
				} else if label, ok := c.digests[tok+"="]; ok {
					seen[label] = true
				}
			}
			i = j + 1
		}
	}
	found := make([]string, 0, len(seen))
	for l := range seen {
		found = append(found, l)
	}
	sort.Strings(found)
	return found
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' }

func isBase64(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '/' || b == '-' || b == '_'
}

// Plant returns body with the canary in every string (a standard base64
// string gets the canary's bytes added to what it encodes, so fields that
// carry bytes carry the canary too) and as an extra member of every
// object; a body that is not JSON gets the canary appended. Such a body
// is mostly refused; PlantMembers keeps most submissions valid.
func (c *Canary) Plant(body []byte) []byte { return c.planted(body, true) }

// PlantMembers returns body with the canary only as an extra member of
// every object (name and value): a submission most families still accept
// and measure, so the canary rides through to reports and ledger lines.
func (c *Canary) PlantMembers(body []byte) []byte { return c.planted(body, false) }

func (c *Canary) planted(body []byte, strings bool) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return append(append([]byte{}, body...), c.Value...)
	}
	out, err := json.Marshal(c.plant(v, strings))
	if err != nil {
		return append(append([]byte{}, body...), c.Value...)
	}
	c.addDigests(fmt.Sprintf("planted body %d", len(c.digests)/3+1), out)
	return out
}

func (c *Canary) plant(v any, strings bool) any {
	switch t := v.(type) {
	case string:
		if !strings {
			return t
		}
		if raw, err := base64.StdEncoding.Strict().DecodeString(t); err == nil && len(t) >= 4 {
			return base64.StdEncoding.EncodeToString(append(raw, " "+c.Value...))
		}
		return t + " " + c.Value
	case []any:
		for i := range t {
			t[i] = c.plant(t[i], strings)
		}
		return t
	case map[string]any:
		for k, x := range t {
			t[k] = c.plant(x, strings)
		}
		t[c.Value] = c.Value
		return t
	}
	return v
}

// Request is one planted request.
type Request struct {
	Method, Path string
	Body         []byte
}

// Requests are the planted requests for a family: every corpus case's
// request twice, with the canary everywhere (Plant) and as extra members
// (PlantMembers), and an unmatched op with the canary in its path.
func (c *Canary) Requests(service string, corpus []byte) ([]Request, error) {
	var doc selftest.Corpus
	if err := json.Unmarshal(corpus, &doc); err != nil {
		return nil, fmt.Errorf("canaryproof: %s corpus: %w", service, err)
	}
	out := []Request{{Method: http.MethodPost, Path: "/" + service + "/" + c.Value, Body: []byte(`{"` + c.Value + `":1}`)}}
	for _, tc := range doc.Cases {
		body := []byte(tc.Request.Body)
		if tc.Request.BodyText != nil {
			body = []byte(*tc.Request.BodyText)
		}
		method := tc.Request.Method
		if method == "" {
			method = http.MethodPost
		}
		out = append(out, Request{Method: method, Path: tc.Request.Path, Body: c.Plant(body)},
			Request{Method: method, Path: tc.Request.Path, Body: c.PlantMembers(body)})
	}
	return out, nil
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
		findings = append(findings, c.Scan(surface, withoutMembers(rec.Body.Bytes(), exempt))...)
		for name, vals := range rec.Header() {
			findings = append(findings, c.Scan(surface+", header "+name, []byte(strings.Join(vals, "\n")))...)
		}
	}
	return statuses, findings
}

// pathOf is a request path fit to name in a finding: the canary's own
// path segment is named as such.
func pathOf(path, canary string) string { return strings.ReplaceAll(path, canary, "<canary>") }

// withoutMembers is a JSON answer with the values of the named members
// (at any depth) removed; an answer that is not JSON is searched whole.
func withoutMembers(raw []byte, names []string) []byte {
	if len(names) == 0 {
		return raw
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return raw
	}
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	out, err := json.Marshal(strip(v, drop))
	if err != nil {
		return raw
	}
	return out
}

func strip(v any, drop map[string]bool) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = strip(t[i], drop)
		}
	case map[string]any:
		for k, x := range t {
			if drop[k] {
				delete(t, k)
				continue
			}
			t[k] = strip(x, drop)
		}
	}
	return v
}

// Finding is a trace of the canary on a surface.
type Finding struct {
	Surface string
	Forms   []string
}

func (f Finding) String() string { return f.Surface + " (" + strings.Join(f.Forms, ", ") + ")" }

// Scan searches one surface's bytes.
func (c *Canary) Scan(surface string, data []byte) []Finding {
	if forms := c.Find(data); len(forms) > 0 {
		return []Finding{{Surface: surface, Forms: forms}}
	}
	return nil
}

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
