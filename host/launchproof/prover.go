package launchproof

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk/canary"
)

// Target is one loaded service and the key its proof is recorded under
// (Parts.Key).
type Target struct {
	Service server.Service
	Key     string
}

// Config is what a prover needs.
type Config struct {
	// Store records passed proofs and is asked for them (nil: every start
	// proves, nothing is recorded).
	Store *store.Store
	// Board holds a service back while it is proven, and stops it on this
	// host when it fails.
	Board *servicestate.Board
	Keys  *signing.Keyring
	// Tap is the host log's tap (nil: the log is not searched).
	Tap *Tap
	Log hclog.Logger
	// HostID and Version name the host in the proofs it records.
	HostID, Version string
}

// Prover proves a host's services and records what passed.
type Prover struct {
	cfg Config

	mu sync.Mutex
	// phase is what runs for each service being proven
	phase map[string]string
}

// New builds a prover.
func New(cfg Config) *Prover {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Prover{cfg: cfg, phase: map[string]string{}}
}

// KeyOf is the board's key of a service.
func KeyOf(svc server.Service) servicestate.Key {
	d := svc.Desc
	return servicestate.Key{Service: d.GetService(), CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision()}
}

// Unproven looks each target's proof up in the store: a service whose
// proof is on record is served at once; the rest are held back on the
// board (503 service_starting) until Prove has run, and returned. A store
// that does not answer proves everything: a proof is never assumed.
func (p *Prover) Unproven(ctx context.Context, targets []Target) []Target {
	var out []Target
	for _, t := range targets {
		name := t.Service.Desc.GetService()
		if p.cfg.Store != nil {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			proof, ok, err := p.cfg.Store.ProofOf(lctx, t.Key)
			cancel()
			if err != nil {
				p.cfg.Log.Warn("launch proofs not read from the store: this service is proven again", "service", name, "error", err)
			}
			if ok {
				p.cfg.Log.Info("launch proof on record for this plugin set: served without proving again", "service", name,
					"proof", short(t.Key), "passed_at", proof.Passed.Format(time.RFC3339), "by_host", proof.HostID, "cases", proof.Cases, "planted_requests", proof.Planted)
				continue
			}
		}
		p.cfg.Board.StartLocal(KeyOf(t.Service), "its launch proof runs on this host (corpus, then custody check)")
		p.setPhase(name, "waiting")
		out = append(out, t)
	}
	return out
}

// Prove runs each target's proof, the services side by side: one that
// passes is recorded and served, one that fails is stopped on this host
// with the reason (its refusals, /readyz and assay service status name
// it) while the others serve. A service hold names stays held back once
// it passes: a further proof (assay serve --canary-proof) decides.
func (p *Prover) Prove(ctx context.Context, targets []Target, hold func(Target) bool) {
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.setPhase(t.Service.Desc.GetService(), "")
			ok, reason := p.proveOne(ctx, t, "at launch")
			switch {
			case ctx.Err() != nil:
			case ok && hold != nil && hold(t):
			case ok:
				p.cfg.Board.ClearLocal(KeyOf(t.Service))
			default:
				p.cfg.Board.StopLocal(KeyOf(t.Service), reason, "launch proof")
			}
		}()
	}
	wg.Wait()
}

// Relaunch proves a service again (a resume in the store asked for it):
// ok when it passed, else why not.
func (p *Prover) Relaunch(ctx context.Context, t Target) (bool, string) {
	return p.proveOne(ctx, t, "on resume")
}

// Running names what is still being proven ("context-audit: corpus"),
// sorted; empty once every proof has ended.
func (p *Prover) Running() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.phase))
	for s, ph := range p.phase {
		out = append(out, s+": "+ph)
	}
	sort.Strings(out)
	return out
}

func (p *Prover) setPhase(service, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if phase == "" {
		delete(p.phase, service)
		return
	}
	p.phase[service] = phase
}

// failuresLogged bounds the failing cases a proof logs one by one: a
// corpus that fails whole (a family that cannot answer) would otherwise
// bury the rest of the log.
const failuresLogged = 50

// proveOne runs t's corpus, then its custody check, and records the
// proof when both pass. when is "at launch" or "on resume", for the words.
func (p *Prover) proveOne(ctx context.Context, t Target, when string) (bool, string) {
	svc, name, log := t.Service, t.Service.Desc.GetService(), p.cfg.Log
	p.setPhase(name, "corpus")
	r, err := RunCorpus(ctx, svc, p.cfg.Keys)
	switch {
	case ctx.Err() != nil:
		return false, "stopped before its proof ended"
	case err != nil:
		log.Error("corpus not run "+when+": not served", "service", name, "error", err)
		return false, "corpus not run " + when + ": " + err.Error()
	case !r.OK():
		for _, f := range r.Failures[:min(len(r.Failures), failuresLogged)] {
			log.Error("corpus case failed", "service", name, "case", f)
		}
		if n := len(r.Failures) - failuresLogged; n > 0 {
			log.Error("more corpus cases failed than are logged", "service", name, "not_logged", n, "logged", failuresLogged)
		}
		log.Error("corpus failed "+when+": not served", "service", name, "cases", r.Cases, "passed", r.Passed, "ms", r.Elapsed.Milliseconds())
		return false, fmt.Sprintf("corpus failed %s: %d of %d cases failed", when, r.Cases-r.Passed, r.Cases)
	}
	log.Info("corpus passed "+when, "service", name, "cases", r.Cases, "passed", r.Passed, "ms", r.Elapsed.Milliseconds())
	p.setPhase(name, "custody")
	started := time.Now()
	c, found, err := custody(ctx, svc, p.cfg.Keys, p.cfg.Tap)
	switch {
	case ctx.Err() != nil:
		return false, "stopped before its proof ended"
	case err != nil:
		log.Error("custody check not run "+when+": not served", "service", name, "error", err)
		return false, "custody check not run " + when + ": " + err.Error()
	}
	if reason := logCustody(log, name, when, c, found, time.Since(started)); reason != "" {
		return false, reason
	}
	p.record(ctx, t, int64(r.Cases), int64(c.Sent))
	return true, ""
}

// record writes a passed proof to the store; a failed write only means
// the next start proves the set again.
func (p *Prover) record(ctx context.Context, t Target, cases, planted int64) {
	if p.cfg.Store == nil {
		return
	}
	d := t.Service.Desc
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := p.cfg.Store.PutProof(wctx, store.Proof{Key: t.Key, Service: d.GetService(), CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision(),
		Kind: KindLaunch, Passed: time.Now(), HostID: p.cfg.HostID, Version: p.cfg.Version, Cases: cases, Planted: planted})
	if err != nil {
		p.cfg.Log.Warn("launch proof passed but not recorded: the next start proves this set again", "service", d.GetService(), "error", err)
	}
}

// logCustody logs what a custody check found and returns why the service
// is not served ("" when it passed). Answers that print a planted string
// outside the family's exempt members, and a planted value found on any
// other surface, refuse the service; accepted cases a caller's string can
// have withheld only warn (the family still serves every other caller).
// Each names the case, how it was planted and the member's path, or the
// surface: synthetic text, never a submission.
func logCustody(log hclog.Logger, service, when string, c canary.Result, found []canary.Finding, took time.Duration) string {
	var traces []string
	for _, l := range c.Leaks {
		traces = append(traces, l)
	}
	for _, f := range found {
		traces = append(traces, "a planted value on "+f.String())
	}
	for _, l := range traces[:min(len(traces), failuresLogged)] {
		log.Error("family answers print caller-chosen strings: not served (docs/self-check.md)", "service", service, "case", l)
	}
	for _, w := range c.Withheld[:min(len(c.Withheld), failuresLogged)] {
		log.Warn("a caller can have this family's answers withheld (docs/self-check.md)", "service", service, "case", w)
	}
	// one line a family, always: sdk/plugintest waits for it
	level := hclog.Info
	if len(traces)+len(c.Withheld) > 0 {
		level = hclog.Warn
	}
	log.Log(level, "custody check "+when, "service", service, "planted_requests", c.Sent, "leaks", len(c.Leaks), "surfaces", len(found),
		"withheld", len(c.Withheld), "ms", took.Milliseconds())
	if len(traces) == 0 {
		return ""
	}
	first := traces[0]
	if r := []rune(first); len(r) > 200 {
		first = string(r[:200]) + "…"
	}
	return fmt.Sprintf("custody check failed %s: a planted value came back %d times (first: %s)", when, len(traces), first)
}
