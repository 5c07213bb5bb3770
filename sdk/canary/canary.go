// Package canary plants a unique string in submissions and finds it,
// in any form a leak could take (itself, its base64, its SHA-256), in what
// comes back: the custody check a family author's test runs in process
// (familytest.RunCorpus), that a host runs at load (a family with a leak is not served), and that
// `assay serve --canary-proof` runs over every surface before a launch.
package canary

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/assay-audit/assay/sdk/corpus"
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
func (c *Canary) Requests(service string, corpusFile []byte) ([]Request, error) {
	var doc corpus.Corpus
	if err := json.Unmarshal(corpusFile, &doc); err != nil {
		return nil, fmt.Errorf("canary: %s corpus: %w", service, err)
	}
	out := []Request{{Method: http.MethodPost, Path: "/" + service + "/" + c.Value, Body: []byte(`{"` + c.Value + `":1}`)}}
	for _, tc := range doc.Cases {
		body, err := tc.Body(nil)
		if err != nil {
			return nil, fmt.Errorf("canary: %s corpus: case %d: %w", service, len(out), err)
		}
		method := tc.Method()
		out = append(out, Request{Method: method, Path: tc.Request.Path, Body: c.Plant(body)},
			Request{Method: method, Path: tc.Request.Path, Body: c.PlantMembers(body)})
	}
	return out, nil
}

// WithoutMembers is a JSON answer with the values of the named members
// (at any depth) removed; an answer that is not JSON is searched whole.
func WithoutMembers(raw []byte, names []string) []byte {
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
