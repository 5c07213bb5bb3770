package settlementevidence

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// The served document is the published one with only the corpus pin
// changed, and that pin is the shipped corpus's.
func TestServedDocumentIsThePublishedOneRepinned(t *testing.T) {
	published, err := os.ReadFile("../../../shared/criteria/settlement-evidence-v1.json")
	if err != nil {
		t.Fatalf("the published criteria document (shared/ beside the checkout): %v", err)
	}
	var pub, served struct {
		Corpus struct{ SHA256 string } `json:"corpus"`
	}
	if err := json.Unmarshal(published, &pub); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(Document, &served); err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(published, []byte(pub.Corpus.SHA256), []byte(served.Corpus.SHA256), 1)
	if !bytes.Equal(want, Document) {
		t.Error("criteria.json differs from the published document beyond the corpus pin")
	}
	raw, err := os.ReadFile("../../corpus/settlement-evidence/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct{ SHA256 string }
	if err := json.Unmarshal(raw, &corpus); err != nil {
		t.Fatal(err)
	}
	if corpus.SHA256 != served.Corpus.SHA256 || len(corpus.SHA256) != 64 {
		t.Errorf("served pin %s, shipped corpus %s", served.Corpus.SHA256, corpus.SHA256)
	}
}
