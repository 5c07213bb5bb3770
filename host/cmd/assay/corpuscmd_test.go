package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk/corpus"
)

// From a folder of its own, with the example family's files laid out as
// an author keeps them: check passes on the shipped pins; after a case is
// edited it names the corpus file's own pin with both values; pin writes
// both pins, changing the criteria document in those 64 characters only
// (it is served byte for byte), and check passes again.
func TestCorpusPinAndCheck(t *testing.T) {
	dir := t.TempDir()
	src := "../../../sdk/examples/family/count/"
	criteria, err := os.ReadFile(src + "criteria.json")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(src + "corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	cr, co := filepath.Join(dir, "my-criteria.json"), filepath.Join(dir, "cases", "corpus.json")
	_ = os.MkdirAll(filepath.Dir(co), 0o755)
	_ = os.WriteFile(cr, criteria, 0o644)
	_ = os.WriteFile(co, file, 0o644)
	var out bytes.Buffer
	check := func() error {
		out.Reset()
		return run([]string{"corpus", "check", "--corpus", co, "--criteria", cr}, &out, &out)
	}
	if err := check(); err != nil || !strings.HasPrefix(out.String(), "pins hold: ") {
		t.Fatalf("the shipped pins: %v %s", err, out.String())
	}
	old, _ := corpus.Pin(file)
	edited := bytes.Replace(file, []byte(`"status": 200`), []byte(`"status": 400`), 1)
	_ = os.WriteFile(co, edited, 0o644)
	now, _ := corpus.Pin(edited)
	if err := check(); err == nil || !strings.Contains(err.Error(), "the corpus file's sha256 member is "+old+", but the corpus pins to "+now) {
		t.Errorf("an edited case: %v", err)
	}
	out.Reset()
	if err := run([]string{"corpus", "pin", "--corpus", co, "--criteria", cr}, &out, &out); err != nil || !strings.Contains(out.String(), now) {
		t.Fatalf("pin: %v %s", err, out.String())
	}
	gotCriteria, _ := os.ReadFile(cr)
	if want := bytes.Replace(criteria, []byte(old), []byte(now), 1); !bytes.Equal(gotCriteria, want) {
		t.Errorf("the criteria document changed beyond its pin:\n%s", gotCriteria)
	}
	gotCorpus, _ := os.ReadFile(co)
	if want := bytes.Replace(edited, []byte(old), []byte(now), 1); !bytes.Equal(gotCorpus, want) {
		t.Error("the corpus file changed beyond its pin")
	}
	if err := check(); err != nil {
		t.Errorf("after pin: %v", err)
	}
	// a corpus without its own member gets one; criteria without a pin
	// member are named
	_ = os.WriteFile(co, []byte(`{"id":"x","cases":[]}`), 0o644)
	if err := run([]string{"corpus", "pin", "--corpus", co, "--criteria", cr}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Errorf("a corpus given its sha256 member: %v", err)
	}
	_ = os.WriteFile(cr, []byte(`{"criteria_id":"x"}`), 0o644)
	if err := run([]string{"corpus", "pin", "--corpus", co, "--criteria", cr}, &out, &out); err == nil || !strings.Contains(err.Error(), "no corpus.sha256") {
		t.Errorf("criteria without a pin: %v", err)
	}
}
