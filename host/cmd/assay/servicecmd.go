package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk"
)

// serviceCmd is `assay service stop|resume|status`.
func serviceCmd(sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("service " + sub)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL (default: "+EnvStore+", else the config's store)")
	reason := fs.String("reason", "", "stop: why, as every refusal of the service will print it")
	asJSON := fs.Bool("json", false, "status: machine-readable JSON")
	wait := fs.Duration("wait", 0, "stop, resume: how long to wait for every running host to take it (default 15s for stop, 2m for resume)")
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		// the service may come before the flags (`stop NAME --reason …`)
		name, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store}
	})
	if err != nil {
		return err
	}
	switch sub {
	case "stop", "resume":
		if name == "" || fs.NArg() > 1 || fs.NArg() == 1 && fs.Arg(0) != name {
			return fmt.Errorf("service %s: name one service\n%s", sub, usage)
		}
	case "status":
	default:
		return fmt.Errorf("service: stop, resume or status\n%s", usage)
	}
	if sub == "stop" {
		if err := servicestate.CheckReason(*reason); err != nil {
			return fmt.Errorf("service stop: --reason: %w", err)
		}
	}
	if *wait == 0 {
		*wait = map[string]time.Duration{"stop": 15 * time.Second, "resume": 2 * time.Minute}[sub]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := openStore(ctx, cfg, *asJSON, stdout, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	log := hclog.New(&hclog.LoggerOptions{Name: "assay", Level: hclog.Warn, Output: os.Stderr})
	ps, err := startPlugins(ctx, cfg, log, "")
	defer ps.Close()
	if err != nil {
		return err
	}
	if sub == "status" {
		return serviceStatus(ctx, st, ps, *asJSON, stdout)
	}
	var svc *server.Service
	for i := range ps.services {
		if ps.services[i].Desc.GetService() == name {
			svc = &ps.services[i]
		}
	}
	if svc == nil {
		return fmt.Errorf("service %s: %q is not a family in the config", sub, name)
	}
	k := keyOf(*svc)
	if sub == "stop" {
		id, err := st.AppendServiceEvent(ctx, store.ServiceEvent{At: time.Now(), Service: k.Service, CriteriaID: k.CriteriaID,
			CriteriaRevision: k.CriteriaRevision, Action: store.ServiceStop, Reason: *reason, Actor: operator()})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "stopped %s in the store: every host on it answers 503 service_stopped\n", k)
		return awaitHosts(ctx, st, k, id, "stopped", *wait, stdout)
	}
	return serviceResume(ctx, st, *svc, *wait, stdout)
}

// serviceResume runs the corpus the criteria pin against the plugin binary
// every host runs (the config pins its SHA-256); when it passes whole, a
// resume row serves the service again on every host, and hosts whose own
// launch self-test had failed run theirs again.
func serviceResume(ctx context.Context, st *store.Store, svc server.Service, wait time.Duration, stdout io.Writer) error {
	name, k := svc.Desc.GetService(), keyOf(svc)
	tmp, err := os.MkdirTemp("", "assay-resume-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	keys, err := signing.Open(tmp)
	if err != nil {
		return err
	}
	r, err := runCorpus(ctx, svc, keys)
	if err != nil {
		return fmt.Errorf("service resume %s: the corpus did not run: %w", name, err)
	}
	fmt.Fprintf(stdout, "corpus %s: %d of %d cases passed (%d ms)\n", svc.Desc.GetCorpusId(), r.Passed, r.Cases, r.Elapsed.Milliseconds())
	if !r.OK() {
		for _, f := range r.Failures[:min(len(r.Failures), failuresLogged)] {
			fmt.Fprintf(stdout, "  failed: %s\n", f)
		}
		if n := len(r.Failures) - failuresLogged; n > 0 {
			fmt.Fprintf(stdout, "  and %d more\n", n)
		}
		return fmt.Errorf("service resume %s: refused: the corpus must pass whole", name)
	}
	passed, cases := int64(r.Passed), int64(r.Cases)
	id, err := st.AppendServiceEvent(ctx, store.ServiceEvent{At: time.Now(), Service: k.Service, CriteriaID: k.CriteriaID,
		CriteriaRevision: k.CriteriaRevision, Action: store.ServiceResume, Reason: "corpus passed", Actor: operator(),
		CorpusPassed: &passed, CorpusCases: &cases})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "resumed %s in the store: every host on it serves it; a host whose own self-test had stopped it runs it again\n", k)
	return awaitHosts(ctx, st, k, id, "serving", wait, stdout)
}

// serviceUnconfirmed is the exit status of a stop or resume that is in
// the store but that no running host took.
const serviceUnconfirmed = 3

// awaitHosts waits until every running host on the store that loads k has
// acted on service_events row id and stands in state want, and says how
// each does; an error names the hosts that do not (stopped on their own,
// with their reason, or silent within wait).
func awaitHosts(ctx context.Context, st *store.Store, k servicestate.Key, id int64, want string, wait time.Duration, stdout io.Writer) error {
	deadline := time.Now().Add(wait)
	for {
		hosts, err := st.Hosts(ctx)
		if err != nil {
			return err
		}
		var took, refused, silent []string
		for _, h := range hosts {
			if time.Since(h.Seen) > readiness.Live {
				continue // not running
			}
			svc, loaded := hostService(h, k)
			switch {
			case !loaded:
			case h.EventsSeen < id:
				silent = append(silent, h.Label+" ("+h.HostID+")")
			case svc.State == want:
				took = append(took, h.Label+" ("+h.HostID+")")
			default:
				refused = append(refused, fmt.Sprintf("%s (%s): %s: %s", h.Label, h.HostID, svc.State, svc.Reason))
			}
		}
		if len(silent) > 0 && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		if len(took)+len(refused)+len(silent) == 0 {
			// recorded, and confirmed by no host: a script that stops a
			// service before a release must not read this as done on a
			// fleet it did not reach (a wrong --store, hosts down)
			return callExit(serviceUnconfirmed, fmt.Errorf("%s is recorded in the store, but no running host on it loads the service, so none confirmed it (exit %d): the hosts that start later take it; check --store if hosts are running",
				want, serviceUnconfirmed))
		}
		for _, h := range took {
			fmt.Fprintf(stdout, "  %s: %s\n", h, want)
		}
		for _, h := range refused {
			fmt.Fprintf(stdout, "  %s\n", h)
		}
		for _, h := range silent {
			fmt.Fprintf(stdout, "  %s: did not answer within %s\n", h, wait)
		}
		if n := len(refused) + len(silent); n > 0 {
			return fmt.Errorf("%d of %d running hosts are not %s (listed above)", n, len(took)+n, want)
		}
		return nil
	}
}

func hostService(h store.HostStatus, k servicestate.Key) (store.HostService, bool) {
	for _, s := range h.Services {
		if s.Service == k.Service && s.CriteriaID == k.CriteriaID && s.CriteriaRevision == k.CriteriaRevision {
			return s, true
		}
	}
	return store.HostService{}, false
}

type statusRow struct {
	Service          string `json:"service"`
	CriteriaID       string `json:"criteria_id"`
	CriteriaRevision string `json:"criteria_revision"`
	// Binary and SHA256Prefix name the family binary this config serves
	// the service with ("" for a version only the store knows).
	Binary       string `json:"binary,omitempty"`
	SHA256Prefix string `json:"sha256_prefix,omitempty"`
	State        string `json:"state"`
	Reason       string `json:"reason,omitempty"`
	Since        string `json:"since,omitempty"`
	By           string `json:"by,omitempty"`
	Configured   bool   `json:"configured"`
}

// hostRow is one host as `service status` shows it.
type hostRow struct {
	HostID string `json:"host_id"`
	Label  string `json:"label"`
	// Version is the build the host runs ("": an Assay older than the
	// column, the previous version during a rolling upgrade).
	Version string `json:"version"`
	Started string `json:"started"`
	Seen    string `json:"seen"`
	// Running: the host rewrote its row within readiness.Live.
	Running  bool                `json:"running"`
	Ready    bool                `json:"ready"`
	Services []store.HostService `json:"services"`
}

// fleetStatus is `service status --json`.
type fleetStatus struct {
	Store    string      `json:"store"`
	Services []statusRow `json:"services"`
	// Formats are the adapters this config serves each format with.
	Formats []pluginhost.AdapterStatus `json:"formats"`
	Hosts   []hostRow                  `json:"hosts"`
}

// serviceStatus lists every configured service version and every one the
// store has rows for, with its state for the fleet; then each host's own
// view (a service a failed launch self-test stopped on one host is listed
// with that host).
func serviceStatus(ctx context.Context, st *store.Store, ps *plugins, asJSON bool, stdout io.Writer) error {
	rows, err := fleetRows(ctx, st, ps.services)
	if err != nil {
		return err
	}
	for i := range rows {
		for j, svc := range ps.services {
			if rows[i].Configured && keyOf(svc) == (servicestate.Key{Service: rows[i].Service, CriteriaID: rows[i].CriteriaID, CriteriaRevision: rows[i].CriteriaRevision}) {
				rows[i].Binary, rows[i].SHA256Prefix = ps.families[j].Binary(), short(ps.families[j].Pin())
			}
		}
	}
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return err
	}
	out := fleetStatus{Store: st.Where(), Services: rows, Formats: ps.router.Status(), Hosts: []hostRow{}}
	for _, h := range hosts {
		out.Hosts = append(out.Hosts, hostRow{HostID: h.HostID, Label: h.Label, Version: h.Version, Started: sdk.Instant(h.Started), Seen: sdk.Instant(h.Seen),
			Running: time.Since(h.Seen) <= readiness.Live, Ready: h.Ready, Services: h.Services})
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tCRITERIA\tBINARY\tSTATE\tSINCE\tBY\tREASON")
	for _, r := range rows {
		since, by, binary := r.Since, r.By, "-"
		if since == "" {
			since, by = "-", "-"
		}
		if r.Binary != "" {
			binary = r.Binary + " " + r.SHA256Prefix
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\t%s\n", r.Service, r.CriteriaID, r.CriteriaRevision, binary, r.State, since, by, r.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out.Formats) > 0 {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "FORMAT\tADAPTER\tBINARY")
		for _, f := range out.Formats {
			fmt.Fprintf(tw, "%s\t%s\t%s %s\n", f.Format, f.Version, f.Binary, f.SHA256Prefix)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(out.Hosts) == 0 {
		_, err := fmt.Fprintln(stdout, "\nno host has written its status to the store")
		return err
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tID\tVERSION\tSEEN\tREADY\tSTOPPED ON THIS HOST")
	for _, h := range out.Hosts {
		seen, ready := h.Seen, "yes"
		if !h.Running {
			seen += " (not running)"
		}
		if !h.Ready {
			ready = "no"
		}
		var stopped []string
		for _, s := range h.Services {
			if s.State != "serving" {
				stopped = append(stopped, s.Service+": "+s.Reason)
			}
		}
		if len(stopped) == 0 {
			stopped = []string{"-"}
		}
		build := h.Version
		if build == "" {
			build = "older"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Label, h.HostID, build, seen, ready, stopped[0])
		for _, more := range stopped[1:] {
			fmt.Fprintf(tw, "\t\t\t\t\t%s\n", more)
		}
	}
	return tw.Flush()
}

// fleetRows is each service version's state in the store.
func fleetRows(ctx context.Context, st *store.Store, services []server.Service) ([]statusRow, error) {
	rows := map[servicestate.Key]*statusRow{}
	for _, svc := range services {
		k := keyOf(svc)
		rows[k] = &statusRow{Service: k.Service, CriteriaID: k.CriteriaID, CriteriaRevision: k.CriteriaRevision, Configured: true, State: "serving"}
	}
	latest, err := st.LatestServiceEvents(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range latest {
		k := servicestate.Key{Service: e.Service, CriteriaID: e.CriteriaID, CriteriaRevision: e.CriteriaRevision}
		if rows[k] == nil {
			rows[k] = &statusRow{Service: k.Service, CriteriaID: k.CriteriaID, CriteriaRevision: k.CriteriaRevision}
		}
		rows[k].Since, rows[k].By, rows[k].State = sdk.Instant(e.At), e.Actor, "serving"
		switch {
		case e.Action == store.ServiceStop:
			rows[k].Reason, rows[k].State = e.Reason, "stopped"
		case e.CorpusPassed != nil && e.CorpusCases != nil:
			rows[k].Reason = fmt.Sprintf("resumed: corpus %d of %d passed", *e.CorpusPassed, *e.CorpusCases)
		}
	}
	out := []statusRow{}
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Service+"\x00"+out[i].CriteriaID+"\x00"+out[i].CriteriaRevision < out[j].Service+"\x00"+out[j].CriteriaID+"\x00"+out[j].CriteriaRevision
	})
	return out, nil
}
