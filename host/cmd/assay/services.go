package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"

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
	// leftOut are the plugins that could not start (not strict_plugins)
	leftOut []string
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
			// a second adapter for one format is this plugin's problem, not
			// the host's: the first stays, this one is left out and named
			if err := p.leaveOut(cfg, log, pl, err); err != nil {
				return p, err
			}
			continue
		}
		log.Info("adapter loaded", "plugin", pl.Name, "format", a.Description().GetFormatId())
	}
	seen := map[string]bool{}
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
		if seen[d.GetService()] {
			if err := p.leaveOut(cfg, log, pl, fmt.Errorf("plugin %s: service %q is already loaded from another plugin", pl.Name, d.GetService())); err != nil {
				return p, err
			}
			continue
		}
		seen[d.GetService()] = true
		router.Accept(d.GetFormats()...)
		p.families = append(p.families, f)
		p.services = append(p.services, server.Service{Desc: d, Backend: server.FamilyBackend{Family: f}})
		log.Info("family loaded", "plugin", pl.Name, "service", d.GetService(), "criteria", d.GetCriteriaId())
	}
	if only == "" {
		warnIdleAdapters(log, router.Status(), p.services)
	}
	return p, nil
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
	p.leftOut = append(p.leftOut, pl.Name)
	return nil
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
