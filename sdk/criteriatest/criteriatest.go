// Package criteriatest holds the checks every family's criteria package
// runs on the document it serves: it must be the published document with
// only the corpus pin changed, and that pin must be the shipped corpus's.
package criteriatest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/assay-audit/assay/sdk/sharedtest"
)

// Repinned checks served against the published document (shared/<published>,
// e.g. "criteria/stream-divergence-v1.json"; skipped where a clone has no
// shared/) and the corpus at corpusPath.
func Repinned(t *testing.T, served []byte, published, corpusPath string) {
	t.Helper()
	doc := sharedtest.Read(t, published)
	var pub, srv struct {
		Corpus struct{ SHA256 string } `json:"corpus"`
	}
	if err := json.Unmarshal(doc, &pub); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(served, &srv); err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(doc, []byte(pub.Corpus.SHA256), []byte(srv.Corpus.SHA256), 1)
	if !bytes.Equal(want, served) {
		t.Error("the served criteria differ from the published document beyond the corpus pin")
	}
	raw, err := os.ReadFile(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct{ SHA256 string }
	if err := json.Unmarshal(raw, &corpus); err != nil {
		t.Fatal(err)
	}
	if corpus.SHA256 != srv.Corpus.SHA256 || len(corpus.SHA256) != 64 {
		t.Errorf("served pin %s, shipped corpus %s", srv.Corpus.SHA256, corpus.SHA256)
	}
}
