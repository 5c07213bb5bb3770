// Package corpus is the corpus format and the one comparison every runner
// uses: a host's launch self-test (host/selftest), a family author's
// in-process run (familytest.RunCorpus) and `assay corpus pin|check`. The
// format is documented in docs/corpus.md.
package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/assay-audit/assay/sdk"
)

// Corpus is a corpus file: its cases and its pin.
type Corpus struct {
	ID         string `json:"id"`
	CriteriaID string `json:"criteria_id"`
	Service    string `json:"service"`
	SHA256     string `json:"sha256"`
	Cases      []Case `json:"cases"`
}

// Case is one request and what must come back.
type Case struct {
	Name    string  `json:"name"`
	Request Request `json:"request"`
	Expect  Expect  `json:"expect"`
}

// Request is a case's request: body (a JSON value, sent compact) or
// body_text (sent as its UTF-8 bytes unchanged).
type Request struct {
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Body     json.RawMessage `json:"body"`
	BodyText *string         `json:"body_text"`
}

// Expect is a case's expected status and answer (JSON, or body_text for
// an answer that is not JSON).
type Expect struct {
	Status   int             `json:"status"`
	Answer   json.RawMessage `json:"answer"`
	BodyText *string         `json:"body_text"`
}

// Pin is a corpus file's pin: the SHA-256 (hex) of the RFC 8785 form of
// the corpus object without its sha256 member.
func Pin(raw []byte) (string, error) { return sdk.CorpusPin(raw) }

// PinError is a pin that does not hold, naming which: the corpus file's
// own sha256 member, or the criteria document's corpus.sha256.
type PinError struct {
	// Which is "the corpus file's sha256 member" or "the criteria's
	// corpus.sha256".
	Which      string
	Stated, Is string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("%s is %s, but the corpus pins to %s (write both pins: assay corpus pin --corpus FILE --criteria FILE)", e.Which, e.Stated, e.Is)
}

// Parse reads a corpus file and checks that its pin is both the one it
// states and the criteria's (want). A mismatch is a *PinError.
func Parse(raw []byte, want string) (*Corpus, error) {
	pin, err := Pin(raw)
	if err != nil {
		return nil, err
	}
	var c Corpus
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	switch {
	case pin != c.SHA256:
		return nil, &PinError{Which: "the corpus file's sha256 member", Stated: c.SHA256, Is: pin}
	case pin != want:
		return nil, &PinError{Which: "the criteria's corpus.sha256", Stated: want, Is: pin}
	}
	return &c, nil
}

// Method is the case's HTTP method (POST when the case names none).
func (tc Case) Method() string {
	if tc.Request.Method == "" {
		return http.MethodPost
	}
	return tc.Request.Method
}

// Body is the bytes a runner sends: body_text as written, or the body's
// compact JSON (the bytes node's JSON.stringify gives). On a pre-check
// whose body is an object without a caller member, caller (when not nil)
// gives one, appended as the node harness does.
func (tc Case) Body(caller func() string) ([]byte, error) {
	switch {
	case tc.Request.BodyText != nil:
		return []byte(*tc.Request.BodyText), nil
	case len(tc.Request.Body) == 0:
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, tc.Request.Body); err != nil {
		return nil, errors.New("request body is not JSON")
	}
	body := b.Bytes()
	if caller == nil || !strings.HasSuffix(tc.Request.Path, "/precheck") || body[0] != '{' || hasMember(tc.Request.Body, "caller") {
		return body, nil
	}
	member, _ := json.Marshal(caller())
	out := body[:len(body)-1]
	if len(bytes.TrimSpace(out)) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"caller":`...)
	out = append(out, member...)
	return append(out, '}'), nil
}

func hasMember(raw json.RawMessage, name string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[name]
	return ok
}
