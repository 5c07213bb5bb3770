// Package selftest runs a family's corpus against the host's own handler,
// in Go and in process: what `assay serve` does before it serves a family,
// and what `assay service resume` requires before a stopped one serves
// again. It checks what corpus/harness.mjs checks (status, signature
// against the host's keys, issued_at's form, the corpus pin, and deep
// equality with the expected answer, placeholders substituted); the node
// harness stays the independent check that `make test` runs.
package selftest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/sdk"
)

// Placeholders the expected answers carry.
const (
	checkEnd    = "<check-end UTC>"
	pinMark     = "<pin>"
	serverClock = "<server clock>"
)

var instantRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)

// Corpus is a corpus file: its cases and its pin.
type Corpus struct {
	ID      string `json:"id"`
	Service string `json:"service"`
	SHA256  string `json:"sha256"`
	Cases   []Case `json:"cases"`
}

// Case is one request and what must come back.
type Case struct {
	Name    string `json:"name"`
	Request struct {
		Method   string          `json:"method"`
		Path     string          `json:"path"`
		Body     json.RawMessage `json:"body"`
		BodyText *string         `json:"body_text"`
	} `json:"request"`
	Expect struct {
		Status   int             `json:"status"`
		Answer   json.RawMessage `json:"answer"`
		BodyText *string         `json:"body_text"`
	} `json:"expect"`
}

// Result is one corpus run. Failures name the case and the first
// difference (paths and the corpus's own expected values: a corpus is
// synthetic, never a submission).
type Result struct {
	Cases, Passed int
	Failures      []string
	Elapsed       time.Duration
}

// OK reports a run where every case passed.
func (r Result) OK() bool { return r.Cases > 0 && r.Passed == r.Cases }

// Pin is a corpus file's pin: the SHA-256 (hex) of the RFC 8785
// serialization of the corpus object without its sha256 member.
func Pin(raw []byte) (string, error) {
	pin, err := sdk.CorpusPin(raw)
	if err != nil {
		return "", fmt.Errorf("selftest: %w", err)
	}
	return pin, nil
}

// Parse reads a corpus file and checks that its pin (Pin) is both the one
// it declares and want.
func Parse(raw []byte, want string) (*Corpus, error) {
	pin, err := Pin(raw)
	if err != nil {
		return nil, err
	}
	var c Corpus
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("selftest: corpus: %w", err)
	}
	switch {
	case pin != c.SHA256:
		return nil, fmt.Errorf("selftest: the corpus file's sha256 member is %s, but its content pins to %s (re-pin it: make corpus, or assay's corpus tooling)", c.SHA256, pin)
	case pin != want:
		return nil, fmt.Errorf("selftest: the criteria's corpus.sha256 is %s, but the corpus pins to %s (the criteria document must carry the corpus's pin)", want, pin)
	}
	return &c, nil
}

// KeySet is the JWKS an answer is checked against, read when the answer
// arrives: a key rotated in while the corpus runs (on any host of the
// store) signs what follows, and the set the host publishes then lists it.
type KeySet func() []byte

// Fixed is a key set that never changes.
func Fixed(jwks []byte) KeySet { return func() []byte { return jwks } }

// Run sends every case to h, one at a time, each from its own client
// address and with a fresh caller on pre-checks that name none (as the
// node harness does), and checks each answer against keys.
func Run(ctx context.Context, h http.Handler, keys KeySet, c *Corpus) Result {
	start := time.Now()
	r := Result{Cases: len(c.Cases)}
	// each case from its own client address (the free tier counts callers
	// without a wallet by address), fresh on every run
	var prefix [6]byte
	_, _ = rand.Read(prefix[:])
	for i, tc := range c.Cases {
		if ctx.Err() != nil {
			r.Failures = append(r.Failures, "stopped: "+ctx.Err().Error())
			break
		}
		addr := fmt.Sprintf("[fd%02x:%02x%02x:%02x%02x:%02x::%x]:4402", prefix[0], prefix[1], prefix[2], prefix[3], prefix[4], prefix[5], i+1)
		if msg := runCase(ctx, h, keys, c.SHA256, addr, tc); msg != "" {
			r.Failures = append(r.Failures, tc.Name+": "+msg)
			continue
		}
		r.Passed++
	}
	r.Elapsed = time.Since(start)
	return r
}

func runCase(ctx context.Context, h http.Handler, keys KeySet, pin, addr string, tc Case) string {
	var body []byte
	switch {
	case tc.Request.BodyText != nil:
		body = []byte(*tc.Request.BodyText)
	case len(tc.Request.Body) > 0:
		// the file was written by JSON.stringify, so its compact form is
		// the bytes the node harness sends
		var b bytes.Buffer
		if err := json.Compact(&b, tc.Request.Body); err != nil {
			return "request body is not JSON"
		}
		body = b.Bytes()
		if strings.HasSuffix(tc.Request.Path, "/precheck") && body[0] == '{' && !hasMember(tc.Request.Body, "caller") {
			body = withCaller(body)
		}
	}
	method := tc.Request.Method
	if method == "" {
		method = http.MethodPost
	}
	req := httptest.NewRequestWithContext(ctx, method, tc.Request.Path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = addr
	sent := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	received := time.Now()
	if rec.Code != tc.Expect.Status {
		return fmt.Sprintf("status: expected %d, actual %d%s", tc.Expect.Status, rec.Code, refusalOf(rec.Body.Bytes()))
	}
	raw := rec.Body.Bytes()
	if tc.Expect.BodyText != nil {
		if string(raw) != *tc.Expect.BodyText {
			return "body_text differs"
		}
		return ""
	}
	if _, err := signing.Verify(raw, keys()); err != nil {
		return "signature: " + err.Error()
	}
	tree, err := signing.Decode(raw)
	if err != nil {
		return "answer: not JSON"
	}
	answer, ok := tree.(map[string]any)
	if !ok {
		return "answer: not an object"
	}
	delete(answer, "signature")
	issued, _ := answer["issued_at"].(string)
	if !instantRE.MatchString(issued) {
		return "$.issued_at: not YYYY-MM-DDTHH:MM:SSZ"
	}
	if cp, _ := answer["corpus"].(map[string]any); cp == nil || cp["sha256"] != pin {
		return "$.corpus.sha256: not the corpus pin"
	}
	expTree, err := signing.Decode(tc.Expect.Answer)
	if err != nil {
		return "expected answer is not JSON"
	}
	clock := ""
	if carries(expTree, serverClock) {
		v, _ := answer["evaluation_instant"].(string)
		at, err := time.Parse(time.RFC3339, v)
		if !instantRE.MatchString(v) || err != nil || at.Before(sent.Truncate(time.Second)) || at.After(received) {
			return "$.evaluation_instant: not the host's clock during the request"
		}
		clock = v
	}
	return diff(substitute(expTree, issued, pin, clock), answer, "$")
}

// refusalOf names what an answer that came with the wrong status said:
// its kind, or its error's code and (from the self-test's own server,
// which explains a withheld answer) the self-check's rule. The answer is
// the host's to a synthetic case: codes and rules are static words.
func refusalOf(raw []byte) string {
	var a struct {
		Kind  string `json:"kind"`
		Error struct {
			Code, Rule string
		} `json:"error"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return " (not a JSON answer)"
	}
	switch {
	case a.Error.Rule != "":
		return fmt.Sprintf(" (%s: rule %s)", a.Error.Code, a.Error.Rule)
	case a.Error.Code != "":
		return fmt.Sprintf(" (%s)", a.Error.Code)
	case a.Kind != "":
		return fmt.Sprintf(" (kind %s)", a.Kind)
	}
	return ""
}

func hasMember(raw json.RawMessage, name string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[name]
	return ok
}

// withCaller appends a fresh well-formed Solana address as "caller", as
// node's {...body, caller} does.
func withCaller(obj []byte) []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	member := `"caller":"` + solana.EncodeBase58(k) + `"}`
	out := append([]byte{}, obj[:len(obj)-1]...)
	if len(bytes.TrimSpace(out)) > 1 {
		out = append(out, ',')
	}
	return append(out, member...)
}

func carries(v any, mark string) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, mark)
	case []any:
		for _, x := range t {
			if carries(x, mark) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if carries(x, mark) {
				return true
			}
		}
	}
	return false
}

func substitute(v any, issued, pin, clock string) any {
	switch t := v.(type) {
	case string:
		if t == pinMark {
			return pin
		}
		s := strings.ReplaceAll(t, checkEnd, issued)
		if clock != "" {
			s = strings.ReplaceAll(s, serverClock, clock)
		}
		return s
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = substitute(x, issued, pin, clock)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = substitute(x, issued, pin, clock)
		}
		return out
	}
	return v
}

// diff is the first difference between expected and actual ("" when
// equal): member order ignored, array order kept, numbers by value.
func diff(exp, act any, path string) string {
	switch e := exp.(type) {
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			return path + ": not an object"
		}
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			av, ok := a[k]
			if !ok {
				return path + "." + k + ": missing member"
			}
			if d := diff(e[k], av, path+"."+k); d != "" {
				return d
			}
		}
		for k := range a {
			if _, ok := e[k]; !ok {
				return path + "." + k + ": unexpected member"
			}
		}
		return ""
	case []any:
		a, ok := act.([]any)
		if !ok {
			return path + ": not an array"
		}
		for i := 0; i < len(e) && i < len(a); i++ {
			if d := diff(e[i], a[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		if len(e) != len(a) {
			return fmt.Sprintf("%s: expected %d items, actual %d", path, len(e), len(a))
		}
		return ""
	case json.Number:
		a, ok := act.(json.Number)
		if !ok || !sameNumber(e, a) {
			return path + ": number differs"
		}
		return ""
	}
	if exp != act {
		return path + ": value differs"
	}
	return ""
}

func sameNumber(a, b json.Number) bool {
	x, _, errX := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, errY := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	return errX == nil && errY == nil && x.Cmp(y) == 0
}
