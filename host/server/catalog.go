package server

import (
	"encoding/json"
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/assay-audit/assay/sdk"
)

type catalogOp struct {
	Name           string `json:"name"`
	Endpoint       string `json:"endpoint"`
	PriceUSDCUnits int64  `json:"price_usdc_units"`
	PriceLabel     string `json:"price_label"`
	PriceBasis     string `json:"price_basis"`
}

type catalogService struct {
	Service          string      `json:"service"`
	ServiceVersion   string      `json:"service_version"`
	CriteriaID       string      `json:"criteria_id"`
	CriteriaRevision string      `json:"criteria_revision"`
	Criteria         string      `json:"criteria"`
	Precheck         string      `json:"precheck"`
	BodyBytes        int64       `json:"body_bytes"`
	FreePerDay       int64       `json:"free_prechecks_per_day"`
	FreeIntervalMS   int64       `json:"free_precheck_min_interval_ms"`
	Ops              []catalogOp `json:"ops"`
	// State is "serving" or "stopped" (stop-serving, with its reason).
	State         string `json:"state"`
	StoppedReason string `json:"stopped_reason,omitempty"`
	StoppedSince  string `json:"stopped_since,omitempty"`
	StoppedBy     string `json:"stopped_by,omitempty"`
}

type catalogDoc struct {
	Services []catalogService `json:"services"`
	Keys     string           `json:"keys"`
}

func (s *Server) catalogDoc() catalogDoc {
	doc := catalogDoc{Keys: "/keys", Services: []catalogService{}}
	for name, sv := range s.services {
		d := sv.Desc
		cs := catalogService{
			Service: name, ServiceVersion: d.GetServiceVersion(),
			CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision(),
			Criteria: "/" + name + "/criteria", Precheck: "/" + name + "/precheck",
			BodyBytes:  d.GetBodyBytes(),
			FreePerDay: d.GetFreeTier().GetPerDay(), FreeIntervalMS: d.GetFreeTier().GetMinIntervalMs(),
		}
		cs.State = "serving"
		if st := s.cfg.States.State(sv.key()); st.Stopped {
			cs.State, cs.StoppedReason, cs.StoppedSince, cs.StoppedBy = "stopped", st.Reason, sdk.Instant(st.Since), st.Actor
		}
		for _, op := range d.GetOps() {
			cs.Ops = append(cs.Ops, catalogOp{Name: op.GetName(), Endpoint: "/" + name + "/" + op.GetName(),
				PriceUSDCUnits: op.GetPriceUsdcUnits(), PriceLabel: op.GetPriceLabel(), PriceBasis: op.GetPriceBasis()})
		}
		doc.Services = append(doc.Services, cs)
	}
	sort.Slice(doc.Services, func(i, j int) bool { return doc.Services[i].Service < doc.Services[j].Service })
	return doc
}

var catalogPage = template.Must(template.New("catalog").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Assay</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left}
code{background:#f4f4f4;padding:0 .2rem}</style></head><body>
<h1>Assay</h1>
<p>Signed, criteria-bound audit services. Every answer is signed (Ed25519 over RFC 8785 JSON); public keys at <a href="{{.Keys}}"><code>{{.Keys}}</code></a>.</p>
<table><tr><th>service</th><th>state</th><th>criteria</th><th>free pre-check</th><th>paid</th></tr>
{{range .Services}}<tr><td>{{.Service}} {{.ServiceVersion}}</td>
<td>{{.State}}{{if .StoppedReason}}: {{.StoppedReason}} (since {{.StoppedSince}}, by {{.StoppedBy}}){{end}}</td>
<td><a href="{{.Criteria}}">{{.CriteriaID}}</a> ({{.CriteriaRevision}})</td>
<td><code>POST {{.Precheck}}</code> ({{.FreePerDay}}/day)</td>
<td>{{range .Ops}}<code>POST {{.Endpoint}}</code> {{.PriceLabel}} {{.PriceBasis}}<br>{{end}}</td></tr>
{{end}}</table></body></html>`))

func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	doc := s.catalogDoc()
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = catalogPage.Execute(w, doc)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}
