package launchproof

import (
	"bytes"
	"strings"
	"testing"
)

// Every part a proof depends on changes its key; the order adapters are
// listed in does not.
func TestKeyNamesEveryPart(t *testing.T) {
	base := Parts{Kind: KindLaunch, HostBuild: "h", Family: "f", Adapters: map[string]string{"a": "1", "b": "2"},
		Service: "s", CriteriaID: "c/v1", CriteriaRevision: "1.0.0", CorpusPin: "p"}
	same := base
	same.Adapters = map[string]string{"b": "2", "a": "1"}
	if base.Key() != same.Key() {
		t.Error("the adapters' order changed the key")
	}
	if len(base.Key()) != 64 || strings.Trim(base.Key(), "0123456789abcdef") != "" {
		t.Errorf("key %q is not a hex SHA-256", base.Key())
	}
	changes := map[string]func(p *Parts){
		"kind":           func(p *Parts) { p.Kind = KindCanary },
		"host build":     func(p *Parts) { p.HostBuild = "h2" },
		"family":         func(p *Parts) { p.Family = "f2" },
		"an adapter":     func(p *Parts) { p.Adapters = map[string]string{"a": "1", "b": "3"} },
		"adapter gone":   func(p *Parts) { p.Adapters = map[string]string{"a": "1"} },
		"adapter added":  func(p *Parts) { p.Adapters = map[string]string{"a": "1", "b": "2", "c": "3"} },
		"service":        func(p *Parts) { p.Service = "s2" },
		"criteria":       func(p *Parts) { p.CriteriaID = "c/v2" },
		"revision":       func(p *Parts) { p.CriteriaRevision = "1.1.0" },
		"corpus pin":     func(p *Parts) { p.CorpusPin = "p2" },
		"moved boundary": func(p *Parts) { p.Service, p.CriteriaID = "sc/v1", "" },
	}
	seen := map[string]string{base.Key(): "base"}
	for name, change := range changes {
		p := base
		change(&p)
		if was, ok := seen[p.Key()]; ok {
			t.Errorf("changing the %s gives the key of %s", name, was)
		}
		seen[p.Key()] = name
	}
}

// The tap keeps the log only while a reader is open, each reader its own
// window from its Begin; everything passes through to the log itself.
func TestTapKeepsEachReadersWindow(t *testing.T) {
	var out bytes.Buffer
	tap := NewTap(&out)
	_, _ = tap.Write([]byte("before\n"))
	a := tap.Begin()
	_, _ = tap.Write([]byte("one\n"))
	b := tap.Begin()
	_, _ = tap.Write([]byte("two\n"))
	if got := string(tap.End(a)); got != "one\ntwo\n" {
		t.Errorf("the first reader's window: %q", got)
	}
	_, _ = tap.Write([]byte("three\n"))
	if got := string(tap.End(b)); got != "two\nthree\n" {
		t.Errorf("the second reader's window: %q", got)
	}
	_, _ = tap.Write([]byte("after\n"))
	c := tap.Begin()
	if got := string(tap.End(c)); got != "" {
		t.Errorf("a window kept lines from before its Begin: %q", got)
	}
	if out.String() != "before\none\ntwo\nthree\nafter\n" {
		t.Errorf("the log itself: %q", out.String())
	}
}
