package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/corpus"
)

// ErrReportDiffers is a report whose facts are not what its plugins give
// for the submission: the report was altered, or it is another
// submission's.
var ErrReportDiffers = errors.New("the report is not what its plugins give for this submission")

// reportFacts are the members of a report that name what produced it.
type reportFacts struct {
	Service, Op, Kind string
	CriteriaID        string
	CriteriaRevision  string
	CorpusPin         string
	Family            string
	Adapters          map[string]string
	// Now is the instant the host's clock said when the request arrived,
	// as far as the report tells it: its evaluation_instant where it
	// prints one, else its issued_at.
	Now time.Time
}

// notCompared are the answer members a rerun cannot reproduce and that
// say nothing of the submission: when, who signed, what was paid, what
// was left of the free allowance, which binaries (checked on their own).
var notCompared = []string{"signature", "issued_at", "payment", "free_tier", "build"}

// instant is an RFC 3339 UTC instant inside a string: a sentence carrying
// the check's end (a verdict line) differs only there on a rerun.
var instant = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)

// verifySubmission runs the plugins a report names on the submission it
// was issued for, offline, and compares every fact: the report holds when
// each one is what the same binaries give now, times aside.
func verifySubmission(ctx context.Context, report, body []byte, dir string, stdout io.Writer) error {
	facts, err := readReportFacts(report)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "assay-verify-")
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer os.RemoveAll(tmp)
	ran, err := startBuild(ctx, facts, dir)
	if err != nil {
		return err
	}
	defer ran.close()
	keys, err := signing.Open(tmp) // the rerun's answer is compared, never handed out
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	h := server.New(server.Config{Services: []server.Service{ran.service}, Keys: keys, Payments: payment.Off{}, Metrics: metrics.New(),
		Logger: hclog.NewNullLogger(), Now: func() time.Time { return facts.Now }})
	path := "/" + facts.Service + "/" + facts.Op
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body)))
	if diff := compareFacts(report, rec.Body.Bytes()); diff != "" {
		return fmt.Errorf("%w: the first fact that differs is %s (the rerun answered %d)", ErrReportDiffers, diff, rec.Code)
	}
	_, err = fmt.Fprintf(stdout, "every fact holds: the report is what %s (criteria %s %s) gives for this submission%s\n",
		facts.Service, facts.CriteriaID, facts.CriteriaRevision, ran.note())
	return err
}

// readReportFacts reads what produced a report from its members.
func readReportFacts(report []byte) (reportFacts, error) {
	tree, err := sdk.DecodeJSON(report)
	doc, ok := tree.(map[string]any)
	if err != nil || !ok {
		return reportFacts{}, errors.New("verify: the report is not a JSON object")
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	obj := func(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }
	f := reportFacts{Service: str(doc, "service"), Op: str(doc, "op"), Kind: str(doc, "kind"),
		CriteriaID: str(obj(doc, "criteria"), "id"), CriteriaRevision: str(obj(doc, "criteria"), "revision"),
		CorpusPin: str(obj(doc, "corpus"), "sha256"), Family: str(obj(doc, "build"), "family_sha256"), Adapters: map[string]string{}}
	for format, pin := range obj(obj(doc, "build"), "adapters_sha256") {
		if s, ok := pin.(string); ok {
			f.Adapters[format] = s
		}
	}
	if f.Service == "" || f.Op == "" || f.CriteriaID == "" {
		return reportFacts{}, errors.New("verify: the answer names no service, op or criteria: not an Assay answer")
	}
	if strings.ContainsAny(f.Service+f.Op, "/?#") {
		return reportFacts{}, errors.New("verify: the answer's service or op is not a route name")
	}
	for _, k := range []string{"evaluation_instant", "issued_at"} {
		if t, err := time.Parse(time.RFC3339, str(doc, k)); err == nil {
			f.Now = t
			break
		}
	}
	if f.Now.IsZero() {
		return reportFacts{}, errors.New("verify: the answer has no issued_at instant")
	}
	return f, nil
}

// compareFacts is the first way the rerun's answer differs from the
// report, the members it cannot reproduce left out and instants inside
// strings masked; "" when every fact holds.
func compareFacts(report, rerun []byte) string {
	exp, err1 := sdk.DecodeJSON(report)
	act, err2 := sdk.DecodeJSON(rerun)
	e, ok1 := exp.(map[string]any)
	a, ok2 := act.(map[string]any)
	if err1 != nil || err2 != nil || !ok1 || !ok2 {
		return "$ (the rerun's answer is not a JSON object)"
	}
	for _, k := range notCompared {
		delete(e, k)
		delete(a, k)
	}
	d := corpus.Diff(maskInstants(e), maskInstants(a), "$")
	// the path only: a fact's value may be a string the submission chose
	// (an id, a label), and errors carry no part of a submission
	if i := strings.Index(d, ": "); i > 0 {
		d = d[:i]
	}
	return d
}

// maskInstants replaces every instant inside a string with one mark.
func maskInstants(v any) any {
	switch t := v.(type) {
	case string:
		return instant.ReplaceAllString(t, "<instant>")
	case []any:
		for i := range t {
			t[i] = maskInstants(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = maskInstants(t[k])
		}
	}
	return v
}

// ranBuild is the plugins a verification started.
type ranBuild struct {
	service server.Service
	closers []func()
	// notes say where a binary of the report's build was not found and
	// another served instead
	notes []string
}

func (r *ranBuild) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

func (r *ranBuild) note() string {
	if len(r.notes) == 0 {
		return ", run on the very binaries the report names"
	}
	return "; but " + strings.Join(r.notes, "; ")
}

// pluginFile is a plugin file in the plugin folder, with its pin.
type pluginFile struct{ name, pin string }

// pluginBinaries lists dir's plugin binaries (as `assay plugins pin`
// names them: assay-<family>, assay-adapter-<format>) with their SHA-256.
func pluginBinaries(dir string) (families, adapters []pluginFile, err error) {
	names, err := pluginFiles(dir, io.Discard)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	for _, n := range names {
		pin, err := pluginhost.PinOf(filepath.Join(dir, n))
		if err != nil {
			return nil, nil, fmt.Errorf("verify: %w", err)
		}
		if strings.HasPrefix(n, "assay-adapter-") {
			adapters = append(adapters, pluginFile{n, pin})
		} else {
			families = append(families, pluginFile{n, pin})
		}
	}
	return families, adapters, nil
}

// startBuild starts the report's family and adapters from dir: the
// binaries with the report's pins; where one is missing, a binary that
// describes itself the same way (the family's service, criteria and
// corpus pin; an adapter's format), named in the notes.
func startBuild(ctx context.Context, f reportFacts, dir string) (*ranBuild, error) {
	families, adapters, err := pluginBinaries(dir)
	if err != nil {
		return nil, err
	}
	opts := pluginhost.Options{Dir: dir, Env: pluginEnv(), Logger: hclog.NewNullLogger()}
	r := &ranBuild{}
	router := pluginhost.NewRouter()
	// the report's own adapters first: the router keeps the first adapter
	// of a format, so another build serves a format only where the
	// report's binary is missing
	sort.SliceStable(adapters, func(i, j int) bool { return owned(f.Adapters, adapters[i].pin) && !owned(f.Adapters, adapters[j].pin) })
	used := map[string]string{}
	for _, b := range adapters {
		a, err := pluginhost.StartAdapter(ctx, pluginhost.Spec{Name: b.name, Path: b.name, SHA256: b.pin}, opts)
		if err != nil {
			continue // a broken or foreign binary in the folder is not the report's
		}
		if router.Add(a) != nil {
			a.Close()
			continue
		}
		r.closers = append(r.closers, a.Close)
		used[a.Description().GetFormatId()] = b.pin
	}
	for format, pin := range f.Adapters {
		switch got := used[format]; {
		case got == "":
			r.notes = append(r.notes, fmt.Sprintf("no adapter for %s was found in %s (the report's is %s)", format, dir, short(pin)))
		case got != pin:
			r.notes = append(r.notes, fmt.Sprintf("the %s adapter run is %s, not the report's %s", format, short(got), short(pin)))
		}
	}
	sort.SliceStable(families, func(i, j int) bool { return families[i].pin == f.Family && families[j].pin != f.Family })
	for _, b := range families {
		fam, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: b.name, Path: b.name, SHA256: b.pin}, opts, router)
		if err != nil {
			continue
		}
		d := fam.Description()
		if d.GetService() != f.Service || d.GetCriteriaId() != f.CriteriaID || d.GetCriteriaRevision() != f.CriteriaRevision || d.GetCorpusSha256() != f.CorpusPin {
			fam.Close()
			continue
		}
		r.closers = append(r.closers, fam.Close)
		router.Accept(d.GetFormats()...)
		if b.pin != f.Family {
			r.notes = append(r.notes, fmt.Sprintf("the family binary run is %s (%s), not the report's %s: the same criteria and corpus pins, another build",
				b.name, short(b.pin), short(f.Family)))
		}
		r.service = server.Service{Desc: d, Backend: server.FamilyBackend{Family: fam}}
		return r, nil
	}
	r.close()
	return nil, fmt.Errorf("verify: no plugin in %s serves %s under criteria %s %s with corpus %s (the report's family binary is %s): "+
		"name the folder holding that build with --plugins", dir, f.Service, f.CriteriaID, f.CriteriaRevision, short(f.CorpusPin), short(f.Family))
}

func owned(pins map[string]string, pin string) bool {
	for _, p := range pins {
		if p == pin {
			return true
		}
	}
	return false
}

// short is a pin's first 12 characters, enough to tell builds apart.
func short(pin string) string {
	if pin == "" {
		return "(none named)"
	}
	return pin[:min(len(pin), 12)]
}
