package server

import (
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

type catalogOp struct {
	Name           string `json:"name"`
	Endpoint       string `json:"endpoint"`
	PriceUSDCUnits int64  `json:"price_usdc_units"`
	PriceLabel     string `json:"price_label"`
	PriceBasis     string `json:"price_basis"`
	// Example is a curl command for the op (its body from the corpus).
	Example string `json:"example"`
}

type catalogService struct {
	Service          string           `json:"service"`
	ServiceVersion   string           `json:"service_version"`
	CriteriaID       string           `json:"criteria_id"`
	CriteriaRevision string           `json:"criteria_revision"`
	Criteria         string           `json:"criteria"`
	Page             string           `json:"page"`
	Precheck         string           `json:"precheck"`
	PrecheckExample  string           `json:"precheck_example"`
	BodyBytes        int64            `json:"body_bytes"`
	Caps             map[string]int64 `json:"caps"`
	FreePerDay       int64            `json:"free_prechecks_per_day"`
	FreeIntervalMS   int64            `json:"free_precheck_min_interval_ms"`
	Ops              []catalogOp      `json:"ops"`
	// Measures and Never are the criteria's own sentences: what the
	// service states and what it never does or says.
	Measures string `json:"measures"`
	Never    string `json:"never"`
	// NeverAssessable is the criteria's never-assessable register, where
	// it has one.
	NeverAssessable []string `json:"never_assessable,omitempty"`
	// State is "serving", "starting" (its launch proof runs on this host:
	// served within seconds) or "stopped" (stop-serving, with its reason).
	State         string `json:"state"`
	StoppedReason string `json:"stopped_reason,omitempty"`
	StoppedSince  string `json:"stopped_since,omitempty"`
	StoppedBy     string `json:"stopped_by,omitempty"`
}

// catalogPayment is what every paid route asks apart from its price, as
// its 402 carries it (payment.Terms).
type catalogPayment struct {
	Protocol          string `json:"protocol"`
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	Asset             string `json:"asset"`
	PayTo             string `json:"pay_to"`
	MaxTimeoutSeconds int64  `json:"max_timeout_seconds"`
	Note              string `json:"note,omitempty"`
	// PayerNeedsNode: the 402s carry no recent blockhash, so a payer's
	// client reads one from a Solana node before it can sign; a payer
	// plans for it before the first 402.
	PayerNeedsNode bool `json:"payer_needs_node"`
	// Manifest is the x402 capability manifest (/.well-known/x402).
	Manifest string `json:"manifest"`
	// UnpaidPerMinute is each client's allowance of requests without a
	// payment on paid routes (0: not limited on this host).
	UnpaidPerMinute int `json:"unpaid_per_minute"`
}

type catalogDoc struct {
	Services []catalogService `json:"services"`
	Keys     string           `json:"keys"`
	OpenAPI  string           `json:"openapi"`
	// APICatalog is the RFC 9727 API catalog.
	APICatalog string `json:"api_catalog"`
	// Payment is absent when the host takes no payment.
	Payment *catalogPayment `json:"payment,omitempty"`
	// Viewer is the page that checks a signed answer's signature in the
	// browser and draws it.
	Viewer string `json:"viewer"`
	// Adapters are the format adapters this host loaded, each serving,
	// faulting (shown, never enforced) or restarting.
	Adapters []pluginhost.AdapterStatus `json:"adapters"`
}

// criteriaText is what the catalog quotes from a criteria document.
type criteriaText struct {
	Honesty         string   `json:"honesty_line"`
	ScopeBlock      string   `json:"scope_block"`
	Never           string   `json:"never"`
	NeverAssessable []string `json:"never_assessable"`
	InputContract   struct {
		Caps map[string]int64 `json:"caps"`
	} `json:"input_contract"`
}

// quoted reads the criteria's sentences: the honesty line (the scope
// block where the criteria have none) says what a report states.
func quoted(d *pb.FamilyDescription) criteriaText {
	var t criteriaText
	_ = json.Unmarshal(d.GetCriteriaDocument(), &t)
	if t.Honesty == "" {
		t.Honesty = t.ScopeBlock
	}
	return t
}

// curlExample is a copyable request with a body from the corpus.
func curlExample(path string, body []byte, paid bool) string {
	data := "'" + strings.ReplaceAll(string(body), "'", `'\''`) + "'"
	if len(body) == 0 {
		// no corpus case answered 200 on this route: a made-up body (such
		// as {}) would be one the family refuses
		data = "@body.json   # your submission: this family's corpus gives no example of one"
	}
	cmd := "curl -s -X POST http://HOST" + path + " -H 'Content-Type: application/json' \\\n  -d " + data
	if paid {
		cmd = "# unpaid: 402 with PAYMENT-REQUIRED; `assay call --wallet payer.json http://HOST" + path + " body.json` pays and saves the report\n" + cmd
	}
	return cmd
}

// catalogEntry is a service's entry as it stands: its fixed part (made
// once: its examples come from the family's corpus, megabytes of JSON a
// render per catalog read would parse again; /mcp reads the catalog every
// second under load) and its state.
func (s *Server) catalogEntry(name string, sv *service) catalogService {
	sv.entryOnce.Do(func() { sv.entry = fixedEntry(name, sv) })
	cs := sv.entry
	cs.State = "serving"
	if st := s.cfg.States.State(sv.key()); st.Starting {
		cs.State, cs.StoppedReason, cs.StoppedSince, cs.StoppedBy = "starting", st.Reason, sdk.Instant(st.Since), st.Actor
	} else if st.Stopped {
		cs.State, cs.StoppedReason, cs.StoppedSince, cs.StoppedBy = "stopped", st.Reason, sdk.Instant(st.Since), st.Actor
	}
	return cs
}

// fixedEntry is the part of a service's entry that never changes.
func fixedEntry(name string, sv *service) catalogService {
	d := sv.Desc
	q := quoted(d)
	cs := catalogService{
		Service: name, ServiceVersion: d.GetServiceVersion(),
		CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision(),
		Criteria: "/" + name + "/criteria", Page: "/" + name, Precheck: "/" + name + "/precheck",
		BodyBytes: d.GetBodyBytes(), Caps: q.InputContract.Caps,
		FreePerDay: d.GetFreeTier().GetPerDay(), FreeIntervalMS: d.GetFreeTier().GetMinIntervalMs(),
		Measures: q.Honesty, Never: q.Never, NeverAssessable: q.NeverAssessable,
	}
	// no caller added: a body's caller alone counts against no wallet (a
	// proven one does: SIGN-IN-WITH-X, payers.md)
	example := corpusExample(d.GetCorpus(), "/"+name+"/precheck")
	cs.PrecheckExample = curlExample(cs.Precheck, example, false)
	for _, op := range d.GetOps() {
		endpoint := "/" + name + "/" + op.GetName()
		cs.Ops = append(cs.Ops, catalogOp{Name: op.GetName(), Endpoint: endpoint,
			PriceUSDCUnits: op.GetPriceUsdcUnits(), PriceLabel: op.GetPriceLabel(), PriceBasis: op.GetPriceBasis(),
			Example: curlExample(endpoint, sv.inputs[op.GetName()].Example, true)})
	}
	return cs
}

func (s *Server) catalogDoc() catalogDoc {
	doc := catalogDoc{Keys: "/keys", OpenAPI: "/openapi.json", APICatalog: apiCatalogPath, Viewer: "/view", Services: []catalogService{}, Adapters: []pluginhost.AdapterStatus{}}
	if p, ok := s.cfg.Payments.(payment.Publisher); ok {
		t := p.Terms()
		doc.Payment = &catalogPayment{Protocol: t.Protocol, Scheme: t.Scheme, Network: t.Network, Asset: t.Asset, PayTo: t.PayTo,
			MaxTimeoutSeconds: t.MaxTimeoutSeconds, Note: t.Note, PayerNeedsNode: t.PayerNeedsNode, Manifest: manifestPath}
		if s.cfg.Senders != nil {
			doc.Payment.UnpaidPerMinute = s.cfg.Senders.Limits().UnpaidPerMinute
		}
	}
	if s.cfg.Adapters != nil {
		doc.Adapters = s.cfg.Adapters.Status()
		for i := range doc.Adapters {
			for _, sv := range s.services {
				doc.Adapters[i].Accepted = doc.Adapters[i].Accepted || slices.Contains(sv.Desc.GetFormats(), doc.Adapters[i].Format)
			}
		}
	}
	for name, sv := range s.services {
		doc.Services = append(doc.Services, s.catalogEntry(name, sv))
	}
	sort.Slice(doc.Services, func(i, j int) bool { return doc.Services[i].Service < doc.Services[j].Service })
	return doc
}

// The pages are plain HTML and CSS: no script, no request leaves them, no
// colour that reads as good or bad.
const pageHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:56rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
code,pre{background:#f4f4f4;padding:0 .2rem}pre{padding:.6rem;overflow-x:auto;white-space:pre-wrap}
section{border-top:1px solid #ccc;margin-top:1.5rem}.q{font-style:italic}</style></head><body>`

var catalogPages = template.Must(template.New("service").Parse(`{{define "service"}}<section id="{{.Service}}">
<h2><a href="{{.Page}}">{{.Service}}</a> {{.ServiceVersion}}</h2>
<p>Criteria: <a href="{{.Criteria}}">{{.CriteriaID}}</a> (revision {{.CriteriaRevision}}). State: {{.State}}{{if .StoppedReason}}: {{.StoppedReason}} (since {{.StoppedSince}}, by {{.StoppedBy}}){{end}}.</p>
<p><b>What it states.</b> <span class="q">{{.Measures}}</span></p>
<p><b>What it never does or says.</b> <span class="q">{{.Never}}</span></p>
<table>
<tr><th>free pre-check</th><td><code>POST {{.Precheck}}</code>: {{.FreePerDay}} per UTC day per caller wallet proven with a <code>SIGN-IN-WITH-X</code> header (x402 sign-in-with-x), else per client address, at least {{.FreeIntervalMS}} ms apart</td></tr>
{{range .Ops}}<tr><th>paid: {{.Name}}</th><td><code>POST {{.Endpoint}}</code>: {{.PriceLabel}} {{.PriceBasis}} ({{.PriceUSDCUnits}} USDC units, x402 v2)</td></tr>
{{end}}<tr><th>caps</th><td>{{range $k, $v := .Caps}}{{$k}} {{$v}}; {{end}}</td></tr>
</table>
<p>Pre-check:</p><pre>{{.PrecheckExample}}</pre>
{{range .Ops}}<p>Paid call ({{.Name}}):</p><pre>{{.Example}}</pre>{{end}}
{{end}}
{{define "catalog"}}` + pageHead + `
<h1>Assay</h1>
<p>Signed, criteria-bound audit services. Every answer is signed (Ed25519 over RFC 8785 JSON); public keys at <a href="{{.Keys}}"><code>{{.Keys}}</code></a>; every route in <a href="{{.OpenAPI}}"><code>{{.OpenAPI}}</code></a>. To read a report, drop it on the <a href="{{.Viewer}}">report viewer</a>: it checks the signature in your browser and draws the report, and the report never leaves the browser. Replace HOST with this host's address.</p>
{{with .Payment}}<p>{{if .PayerNeedsNode}}Paying needs a Solana node: this host's 402s carry no recent blockhash, so your x402 client reads one from a Solana JSON-RPC node before it signs (<code>assay call --solana-rpc URL</code>, or the network's public node).{{else}}Paying needs no Solana node of your own: this host's 402s carry the recent blockhash to sign with.{{end}}{{if .UnpaidPerMinute}} Requests without a payment on a paid route (how a client gets its 402) are limited to {{.UnpaidPerMinute}} a minute per client; each paid report gives one back.{{end}}</p>{{end}}
{{range .Services}}{{template "service" .}}{{end}}
{{if .Adapters}}<h2>Format adapters</h2><ul>{{range .Adapters}}<li><code>{{.Format}}</code> for {{.Family}}, adapter {{.Version}} (<code>{{.Binary}}</code>, SHA-256 <code>{{.SHA256Prefix}}</code>…): {{if eq .State "restarting"}}restarting (its requests are answered at once, 503 with Retry-After){{else if eq .State "faulting"}}serving, with {{.Faults}} faults and {{.Answers}} good answers in the last minute (a fault fails only the request that caused it){{else}}serving{{end}}{{if not .Accepted}}; no loaded criteria accept its format, so no request reaches it{{end}}</li>{{end}}</ul>{{end}}
</body></html>{{end}}
{{define "one"}}` + pageHead + `
<p><a href="/">All services</a> · <a href="/view">report viewer</a></p>
{{template "service" .}}
{{if .NeverAssessable}}<h3>Never assessable</h3><ul>{{range .NeverAssessable}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>{{end}}`))

func wantsHTML(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), "text/html") }

func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	doc := s.catalogDoc()
	if wantsHTML(r) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = catalogPages.ExecuteTemplate(w, "catalog", struct {
			catalogDoc
			Title string
		}{doc, "Assay"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

// servicePage is GET /{service}: one service's entry, as a page for a
// browser (with the criteria's never-assessable list) or as JSON.
func (s *Server) servicePage(name string, sv *service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cs := s.catalogEntry(name, sv)
		if wantsHTML(r) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = catalogPages.ExecuteTemplate(w, "one", struct {
				catalogService
				Title string
			}{cs, "Assay: " + name})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(cs)
	}
}
