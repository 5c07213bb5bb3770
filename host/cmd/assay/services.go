package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/launchproof"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/selftest"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
)

// plugins are the configured plugins, started: adapters first (a family
// reaches them through the router as soon as it starts), then families.
type plugins struct {
	services []server.Service
	families []*pluginhost.Family
	router   *pluginhost.Router
	closers  []func()
	// leftOut are the plugins that could not start (not strict_plugins),
	// each with why
	leftOut []leftOut
}

func (p *plugins) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}

// startPlugins starts the config's adapters and the families only names
// (every family when only is empty). The caller closes what it returns,
// also on error.
func startPlugins(ctx context.Context, cfg config.Config, log hclog.Logger, only string) (*plugins, error) {
	router := pluginhost.NewRouter()
	p := &plugins{router: router}
	for _, pl := range cfg.Plugins {
		if pl.Kind != "adapter" {
			continue
		}
		a, err := pluginhost.StartAdapter(ctx, pluginhost.Spec{Name: pl.Name, Path: pl.Path, SHA256: pl.SHA256},
			pluginhost.Options{Logger: log, Dir: cfg.PluginDir, Env: pluginEnv()})
		if err != nil {
			if err := p.leaveOut(cfg, log, pl, err); err != nil {
				return p, err
			}
			continue
		}
		p.closers = append(p.closers, a.Close)
		if err := router.Add(a); err != nil {
			// two adapters for one format: which serves it is the
			// operator's to say, never the config's order
			var dup *pluginhost.DuplicateFormatError
			if errors.As(err, &dup) {
				return p, ambiguous("adapt format "+strconv.Quote(dup.Format), dup.Kept, dup.KeptBinary, pl, dup.Format)
			}
			return p, err
		}
		log.Info("adapter loaded", "plugin", pl.Name, "format", a.Description().GetFormatId())
	}
	seen := map[string]config.Plugin{}
	for _, pl := range cfg.Plugins {
		if pl.Kind != "family" || only != "" && pl.Name != only {
			continue
		}
		f, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: pl.Name, Path: pl.Path, SHA256: pl.SHA256},
			pluginhost.Options{Logger: log, Dir: cfg.PluginDir, Env: pluginEnv()}, router)
		if err != nil {
			if err := p.leaveOut(cfg, log, pl, err); err != nil {
				return p, err
			}
			continue
		}
		p.closers = append(p.closers, f.Close)
		d := f.Description()
		if first, dup := seen[d.GetService()]; dup {
			return p, ambiguous("serve "+strconv.Quote(d.GetService()), first.Name, filepath.Base(first.Path), pl, d.GetCriteriaId())
		}
		seen[d.GetService()] = pl
		router.Accept(d.GetFormats()...)
		p.families = append(p.families, f)
		p.services = append(p.services, server.Service{Desc: d, Backend: server.FamilyBackend{Family: f}, Build: pluginBuild(f.Pin(), d.GetFormats(), router)})
		log.Info("family loaded", "plugin", pl.Name, "service", d.GetService(), "criteria", d.GetCriteriaId())
	}
	if only == "" {
		warnIdleAdapters(log, router.Status(), p.services)
	}
	return p, nil
}

// ambiguous refuses a config with two plugins for one format or service,
// naming both binaries and how to choose: a host never picks one by the
// order of its config (an adapter named to sort first would take a
// format from the shipped one).
func ambiguous(what, first, firstBinary string, second config.Plugin, key string) error {
	return fmt.Errorf("plugins %s (%s) and %s (%s) both %s: one plugin serves it. Keep one of the two plugin blocks in the config; "+
		"for a config `assay plugins pin` writes, keep one binary in the folder or choose with `assay plugins pin --choose %s=<binary>`",
		first, firstBinary, second.Name, filepath.Base(second.Path), what, key)
}

// pluginBuild names a family's binary and the adapters this host serves its
// formats with, by their pins (a report's build member).
func pluginBuild(family string, formats []string, router *pluginhost.Router) *server.Build {
	b := &server.Build{Family: family, Adapters: map[string]string{}}
	for _, a := range router.Adapters() {
		if f := a.Description().GetFormatId(); slices.Contains(formats, f) {
			b.Adapters[f] = a.Pin()
		}
	}
	return b
}

// warnIdleAdapters names each adapter no loaded criteria will ever call:
// its format is in no loaded family's accepted formats, or the family it
// names is not loaded. It is served by nobody, silently, otherwise.
func warnIdleAdapters(log hclog.Logger, adapters []pluginhost.AdapterStatus, services []server.Service) {
	for _, a := range adapters {
		accepted, known := false, false
		for _, svc := range services {
			accepted = accepted || slices.Contains(svc.Desc.GetFormats(), a.Format)
			known = known || svc.Desc.GetCriteriaId() == a.Family
		}
		// routing is by format id: whether requests reach an adapter is
		// whether a loaded family accepts its format, whatever family it
		// names (the catalog's accepted_by_loaded_criteria says the same)
		switch {
		case !accepted && !known:
			log.Warn("adapter names a family whose criteria are not loaded; no request will reach it", "format", a.Format, "family", a.Family)
		case !accepted:
			log.Warn("adapter's format is not one the loaded criteria accept (a new format needs a criteria revision); no request will reach it",
				"format", a.Format, "family", a.Family)
		case !known:
			log.Warn("adapter names a family whose criteria are not loaded, but loaded criteria accept its format: requests of that format reach it",
				"format", a.Format, "family", a.Family)
		}
	}
}

// leaveOut takes a plugin that could not start out of this host's run
// (one plugin's defect never stops the others), or, with strict_plugins,
// fails the start as before.
func (p *plugins) leaveOut(cfg config.Config, log hclog.Logger, pl config.Plugin, err error) error {
	if cfg.StrictPlugins {
		return err
	}
	log.Error("plugin could not start and is left out of this host; the others are served (strict_plugins makes this stop the host)",
		"plugin", pl.Name, "kind", pl.Kind, "path", pl.Path, "error", err)
	p.leftOut = append(p.leftOut, leftOut{plugin: pl, err: err})
	return nil
}

// leftOut is a plugin a start left out, and why.
type leftOut struct {
	plugin config.Plugin
	err    error
}

// noFamily is a start with no family to serve: none configured, or every
// one configured left out (each named with its cause: a binary that does
// not match its pin says so).
func noFamily(p *plugins) error {
	var why []string
	for _, l := range p.leftOut {
		if l.plugin.Kind == "family" {
			why = append(why, l.plugin.Name+": "+l.err.Error())
		}
	}
	if len(why) == 0 {
		return errors.New("no family plugin configured: run `make build` (it writes bin/assay.hcl) or pass --config")
	}
	return fmt.Errorf("no family plugin could start (%d configured, every one left out): %s", len(why), strings.Join(why, "; "))
}

// keyOf names a service under its criteria version.
func keyOf(svc server.Service) servicestate.Key { return launchproof.KeyOf(svc) }

// runCorpus runs a family's own corpus behind a host of its own
// (launchproof.RunCorpus).
func runCorpus(ctx context.Context, svc server.Service, keys *signing.Keyring) (selftest.Result, error) {
	return launchproof.RunCorpus(ctx, svc, keys)
}

// failuresLogged bounds the failing cases a command logs one by one.
const failuresLogged = 50

// launchSelfTests proves services as a start with no proof on record
// does: each family's corpus, then its custody check, the families side by
// side; one that fails either is stopped on this host with the reason.
func launchSelfTests(ctx context.Context, services []server.Service, keys *signing.Keyring, board *servicestate.Board, log hclog.Logger) {
	p := launchproof.New(launchproof.Config{Board: board, Keys: keys, Log: log})
	targets := make([]launchproof.Target, 0, len(services))
	for _, svc := range services {
		targets = append(targets, launchproof.Target{Service: svc})
	}
	p.Prove(ctx, p.Unproven(ctx, targets), nil)
}

// serviceKeys are the service versions of services.
func serviceKeys(services []server.Service) []servicestate.Key {
	out := make([]servicestate.Key, 0, len(services))
	for _, svc := range services {
		out = append(out, keyOf(svc))
	}
	return out
}

// proofTargets are the loaded services, each with the key its launch
// proof (kind) is recorded under: the host's build, the family's binary,
// the adapters of the formats it accepts, its criteria and corpus pin.
func proofTargets(ps *plugins, hostBuild, kind string) []launchproof.Target {
	adapters := map[string]string{}
	for _, a := range ps.router.Adapters() {
		adapters[a.Description().GetFormatId()] = a.Pin()
	}
	out := make([]launchproof.Target, 0, len(ps.services))
	for i, svc := range ps.services {
		d := svc.Desc
		parts := launchproof.Parts{Kind: kind, HostBuild: hostBuild, Family: ps.families[i].Pin(), Adapters: map[string]string{},
			Service: d.GetService(), CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision(), CorpusPin: d.GetCorpusSha256()}
		for _, f := range d.GetFormats() {
			if pin, ok := adapters[f]; ok {
				parts.Adapters[f] = pin
			}
		}
		out = append(out, launchproof.Target{Service: svc, Key: parts.Key()})
	}
	return out
}

// hostLabel names this host in the store's host rows: its machine name
// and the address it listens on.
func hostLabel(listen string) string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "host"
	}
	return name + " " + listen
}

// operator names who ran a service command.
func operator() string {
	who := "operator"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who += ":" + u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return who
}
