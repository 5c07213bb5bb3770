package server_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// paidRoute is a paid route of a service the tests load, with its price
// as its criteria write it (never as the host says) and a body it
// measures, so that an unpaid POST gets the route's real 402.
type paidRoute struct {
	path, amount string
	body         []byte
}

// criteriaUnits is a criteria document's price, in USDC atomic units.
func criteriaUnits(t *testing.T, criteria string) string {
	t.Helper()
	raw, err := os.ReadFile("../../criteria/" + criteria + "/criteria.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Price struct {
			Units int64 `json:"usdc_units_per_call"`
		} `json:"price"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Price.Units <= 0 {
		t.Fatalf("criteria %s: %v", criteria, err)
	}
	return strconv.FormatInt(doc.Price.Units, 10)
}

// sdAndTestRoutes are the paid routes of a host with stream-divergence and
// the test family: the test family's criteria (testfamily/family) price
// measure at 1 unit.
func sdAndTestRoutes(t *testing.T) []paidRoute {
	return []paidRoute{
		{"/stream-divergence/compare", criteriaUnits(t, "stream-divergence"), sdBody([]string{"ab", "cd"}, []string{"abXd"})},
		{"/test-family/measure", "1", []byte(`{}`)},
	}
}

// manifestRoute is one route of the manifest's extension member.
type manifestRoute struct {
	URL               string `json:"url"`
	Method            string `json:"method"`
	Service           string `json:"service"`
	Op                string `json:"op"`
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	Asset             string `json:"asset"`
	PayTo             string `json:"payTo"`
	Amount            string `json:"amount"`
	MaxTimeoutSeconds int64  `json:"maxTimeoutSeconds"`
}

// manifest is /.well-known/x402 as its consumers read it, and its raw
// members for the draft's shape rules.
type manifest struct {
	X402Version int    `json:"x402Version"`
	Kind        string `json:"kind"`
	Docs        string `json:"docs"`
	Resources   []struct {
		URL         string `json:"url"`
		Method      string `json:"method"`
		Description string `json:"description"`
	} `json:"resources"`
	Assay struct {
		PayerNeedsNode *bool           `json:"payerNeedsNode"`
		Note           string          `json:"note"`
		Keys           string          `json:"keys"`
		Routes         []manifestRoute `json:"routes"`
	} `json:"assay"`
	raw map[string]any
}

// getManifest fetches the manifest, checks its headers and signature,
// and the draft's shape rules (draft-hawkins-x402-dns-discovery-03): an
// integer x402Version (never spelled version), a kind, resources as
// bare pointers on the manifest's own origin (a partly filled entry must
// not be published), and no member Assay cannot fill truthfully.
func getManifest(t *testing.T, h *testhost.Host, base string) manifest {
	t.Helper()
	r := do(t, "GET", h.URL+"/.well-known/x402", nil, nil)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || r.header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(r.header.Get("Cache-Control"), "max-age=") {
		t.Fatalf("GET /.well-known/x402: %d %v", r.status, r.header)
	}
	verified(t, h, r)
	var m manifest
	if err := json.Unmarshal(r.raw, &m); err != nil {
		t.Fatal(err)
	}
	m.raw = r.json
	if v, ok := m.raw["x402Version"].(float64); !ok || v != 2 {
		t.Errorf("x402Version %v, want the integer 2", m.raw["x402Version"])
	}
	for _, absent := range []string{"version", "facilitator", "updated", "peers", "attestation", "contact"} {
		if _, ok := m.raw[absent]; ok {
			t.Errorf("the manifest has %s", absent)
		}
	}
	if m.Kind != "resource-server" || m.Docs != base+"/" {
		t.Errorf("kind %q, docs %q", m.Kind, m.Docs)
	}
	origin, _ := url.Parse(base)
	for i, entry := range m.raw["resources"].([]any) {
		for k := range entry.(map[string]any) {
			if k != "url" && k != "method" && k != "description" {
				t.Errorf("resource %d is not a bare pointer: %s", i, k)
			}
		}
		u, err := url.Parse(m.Resources[i].URL)
		if err != nil || u.Scheme != origin.Scheme || u.Host != origin.Host || m.Resources[i].Method != "POST" {
			t.Errorf("resource %d: %+v", i, m.Resources[i])
		}
	}
	if m.Assay.Keys != base+"/keys" || m.Assay.PayerNeedsNode == nil {
		t.Errorf("extension member: %+v", m.Assay)
	}
	return m
}

// checkAgainst402s proves that every manifest entry says what its
// route's real 402 says (an unpaid POST's PAYMENT-REQUIRED), that both
// say the values the host was configured with, and that the manifest
// lists exactly the paid routes.
func checkAgainst402s(t *testing.T, m manifest, host, base, network, asset, payTo string, routes []paidRoute) {
	t.Helper()
	if len(m.Resources) != len(routes) || len(m.Assay.Routes) != len(routes) {
		t.Fatalf("the manifest lists %d resources and %d routes, the host has %d paid routes", len(m.Resources), len(m.Assay.Routes), len(routes))
	}
	byURL := map[string]manifestRoute{}
	for _, e := range m.Assay.Routes {
		byURL[e.URL] = e
	}
	for i, rt := range routes {
		r := post(t, host+rt.path, rt.body)
		if r.status != 402 || errorCode(r) != "payment_required" {
			t.Fatalf("unpaid POST %s: %d %.300s", rt.path, r.status, r.raw)
		}
		var pr x402.PaymentRequired
		decodeHeader(t, r.header.Get("PAYMENT-REQUIRED"), &pr)
		a := pr.Accepts[0]
		e, ok := byURL[base+rt.path]
		if !ok || pr.Resource.URL != base+rt.path {
			t.Errorf("%s: the 402's resource %q, the manifest has it: %v", rt.path, pr.Resource.URL, ok)
			continue
		}
		if m.Resources[i].URL != pr.Resource.URL || m.Resources[i].Description != pr.Resource.Description || m.X402Version != pr.X402Version {
			t.Errorf("%s: resource %+v, the 402's %+v", rt.path, m.Resources[i], pr.Resource)
		}
		if e.Method != "POST" || "/"+e.Service+"/"+e.Op != rt.path {
			t.Errorf("%s: route %+v", rt.path, e)
		}
		for _, f := range []struct{ name, manifest, got402, want string }{
			{"scheme", e.Scheme, a.Scheme, "exact"},
			{"network", e.Network, a.Network, network},
			{"asset", e.Asset, a.Asset, asset},
			{"payTo", e.PayTo, a.PayTo, payTo},
			{"amount", e.Amount, a.Amount, rt.amount},
			{"maxTimeoutSeconds", strconv.FormatInt(e.MaxTimeoutSeconds, 10), strconv.FormatInt(a.MaxTimeoutSeconds, 10), "300"},
		} {
			if f.manifest != f.got402 || f.manifest != f.want {
				t.Errorf("%s %s: manifest %q, 402 %q, configured %q", rt.path, f.name, f.manifest, f.got402, f.want)
			}
		}
	}
}

// checkNodeFlag reads whether a payer needs its own node where the host
// publishes it (the manifest is read by the caller): the catalog's JSON
// and HTML, and each paid operation's x-payment-info in /openapi.json.
func checkNodeFlag(t *testing.T, host string, routes []paidRoute, want bool) {
	t.Helper()
	var cat struct {
		APICatalog string `json:"api_catalog"`
		Payment    *struct {
			PayerNeedsNode *bool  `json:"payer_needs_node"`
			Manifest       string `json:"manifest"`
		} `json:"payment"`
	}
	if err := json.Unmarshal(do(t, "GET", host+"/", nil, nil).raw, &cat); err != nil || cat.Payment == nil || cat.Payment.PayerNeedsNode == nil ||
		*cat.Payment.PayerNeedsNode != want || cat.Payment.Manifest != "/.well-known/x402" || cat.APICatalog != "/.well-known/api-catalog" {
		t.Errorf("the catalog's payment member: %v %+v", err, cat.Payment)
	}
	page := html.UnescapeString(string(do(t, "GET", host+"/", nil, map[string]string{"Accept": "text/html"}).raw))
	sentence := map[bool]string{true: "Paying needs a Solana node: this host's 402s carry no recent blockhash",
		false: "Paying needs no Solana node of your own: this host's 402s carry the recent blockhash"}
	if !strings.Contains(page, sentence[want]) || strings.Contains(page, sentence[!want]) {
		t.Errorf("the catalog page does not say %q", sentence[want])
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Info struct {
				Protocols []map[string]map[string]any `json:"protocols"`
			} `json:"x-payment-info"`
			Description string `json:"description"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(do(t, "GET", host+"/openapi.json", nil, nil).raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes {
		op := doc.Paths[rt.path]["post"]
		if len(op.Info.Protocols) != 1 || op.Info.Protocols[0]["x402"]["payerNeedsNode"] != want || op.Info.Protocols[0]["x402"]["amount"] != rt.amount {
			t.Errorf("%s x-payment-info: %v", rt.path, op.Info.Protocols)
		}
		if !strings.Contains(op.Description, "payerNeedsNode") {
			t.Errorf("%s: the description does not say what payerNeedsNode means", rt.path)
		}
	}
}

// A house host's manifest (the embedded facilitator, no chain) lists
// every paid route as its 402 does, signed, and says a payer needs no
// node of its own: its 402s carry a blockhash.
func TestWellKnownX402ManifestIsEach402s(t *testing.T) {
	h := startPaid(t, sdPkg, testPkg)
	routes := sdAndTestRoutes(t)
	m := getManifest(t, h.Host, h.URL)
	checkAgainst402s(t, m, h.URL, h.URL, x402.SolanaDevnet, x402.USDCDevnet, h.payTo, routes)
	if *m.Assay.PayerNeedsNode || m.Assay.Note != x402.HouseNote {
		t.Errorf("house gate: payerNeedsNode %v, note %q", *m.Assay.PayerNeedsNode, m.Assay.Note)
	}
	r := post(t, h.URL+routes[0].path, routes[0].body)
	var pr x402.PaymentRequired
	decodeHeader(t, r.header.Get("PAYMENT-REQUIRED"), &pr)
	if bh, _ := pr.Accepts[0].Extra["recentBlockhash"].(string); bh == "" {
		t.Error("the house gate's 402 carries no recentBlockhash: the flag would be false for nothing")
	}
	checkNodeFlag(t, h.URL, routes, false)
}

// startRemote runs a host whose gate uses a remote facilitator and no
// Solana node (none is ever asked: unpaid requests reach no facilitator),
// its public URL pinned by configuration.
func startRemote(t *testing.T, publicURL string, pkgs ...string) (h *testhost.Host, payTo string) {
	dir := t.TempDir()
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	fee, err := wallet.New(filepath.Join(dir, "fee.json"))
	if err != nil {
		t.Fatal(err)
	}
	payTo = solana.EncodeBase58(seller.Public().(ed25519.PublicKey))
	fac, err := x402.NewRemote(context.Background(), "http://127.0.0.1:9", x402.SolanaDevnet, solana.EncodeBase58(fee.Public().(ed25519.PublicKey)))
	if err != nil {
		t.Fatal(err)
	}
	opts := testhost.Options{CallTimeout: 10 * time.Second, Gate: func(tb testing.TB, st *store.Store) payment.Gate {
		g, err := x402.NewGate(context.Background(), x402.Config{Facilitator: fac, Store: st, Network: x402.SolanaDevnet,
			Asset: x402.USDCDevnet, PayTo: payTo, PublicURL: publicURL})
		if err != nil {
			tb.Fatal(err)
		}
		return g
	}}
	return testhost.Start(t, opts, pkgs...), payTo
}

// A host whose remote facilitator has no node beside it issues 402s with
// no blockhash: the manifest, the catalog and /openapi.json say a payer
// needs a node of its own. Its public URL is pinned to configuration, so
// every URL the manifest names is that one, whatever Host a request
// names (the draft forbids deriving them from request input).
func TestWellKnownX402PayerNeedsNode(t *testing.T) {
	const public = "https://assay.example"
	h, payTo := startRemote(t, public, sdPkg, testPkg)
	routes := sdAndTestRoutes(t)
	m := getManifest(t, h, public)
	checkAgainst402s(t, m, h.URL, public, x402.SolanaDevnet, x402.USDCDevnet, payTo, routes)
	if !*m.Assay.PayerNeedsNode || m.Assay.Note != "" {
		t.Errorf("remote gate without a node: payerNeedsNode %v, note %q", *m.Assay.PayerNeedsNode, m.Assay.Note)
	}
	r := post(t, h.URL+routes[0].path, routes[0].body)
	var pr x402.PaymentRequired
	decodeHeader(t, r.header.Get("PAYMENT-REQUIRED"), &pr)
	if _, ok := pr.Accepts[0].Extra["recentBlockhash"]; ok {
		t.Errorf("the 402 carries a blockhash: %v", pr.Accepts[0].Extra)
	}
	checkNodeFlag(t, h.URL, routes, true)

	req, err := http.NewRequest("GET", h.URL+"/.well-known/x402", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(raw), "attacker.example") || !strings.Contains(string(raw), `"`+public+`/stream-divergence/compare"`) {
		t.Errorf("with Host attacker.example: %d %s", resp.StatusCode, raw)
	}
}

// checkAPICatalog reads the RFC 9727 catalog: its media type and profile,
// a linkset (RFC 9264) whose every relation is an array of targets with
// an href, the host's API (openapi.json, the catalog page, /healthz, and
// the x402 manifest when payments are on) and one entry per service
// (its page), every target answering 200. HEAD answers the Link header.
func checkAPICatalog(t *testing.T, host string, services []string, payments bool) {
	t.Helper()
	r := do(t, "GET", host+"/.well-known/api-catalog", nil, nil)
	if r.status != 200 || r.header.Get("Content-Type") != `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"` {
		t.Fatalf("GET /.well-known/api-catalog: %d %q", r.status, r.header.Get("Content-Type"))
	}
	var doc struct {
		Linkset []map[string]json.RawMessage `json:"linkset"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil || len(doc.Linkset) != 1+len(services) {
		t.Fatalf("linkset: %v, %d contexts", err, len(doc.Linkset))
	}
	want := map[string]map[string]string{host + "/": {"service-desc": host + "/openapi.json", "service-doc": host + "/", "status": host + "/healthz"}}
	if payments {
		want[host+"/"]["service-meta"] = host + "/.well-known/x402"
	}
	for _, name := range services {
		want[host+"/"+name] = map[string]string{"service-desc": host + "/openapi.json", "service-doc": host + "/" + name, "status": host + "/healthz"}
	}
	for _, ctx := range doc.Linkset {
		var anchor string
		_ = json.Unmarshal(ctx["anchor"], &anchor)
		rels, ok := want[anchor]
		if !ok {
			t.Errorf("unexpected context %q", anchor)
			continue
		}
		delete(want, anchor)
		var got []string
		for rel, raw := range ctx {
			if rel == "anchor" {
				continue
			}
			got = append(got, rel)
			var targets []struct{ Href, Type string }
			if err := json.Unmarshal(raw, &targets); err != nil || len(targets) != 1 || targets[0].Href != rels[rel] {
				t.Errorf("%s %s: %v %s", anchor, rel, err, raw)
				continue
			}
			if rel == "service-desc" && targets[0].Type != "application/vnd.oai.openapi+json;version=3.1" {
				t.Errorf("%s service-desc type %q", anchor, targets[0].Type)
			}
			if a := do(t, "GET", targets[0].Href, nil, map[string]string{"Accept": targets[0].Type}); a.status != 200 {
				t.Errorf("%s %s %s: %d", anchor, rel, targets[0].Href, a.status)
			}
		}
		sort.Strings(got)
		if len(got) != len(rels) {
			t.Errorf("%s relations %v, want %v", anchor, got, rels)
		}
	}
	if len(want) != 0 {
		t.Errorf("contexts missing: %v", want)
	}
	head := do(t, "HEAD", host+"/.well-known/api-catalog", nil, nil)
	if head.status != 200 || len(head.raw) != 0 || head.header.Get("Link") != `</.well-known/api-catalog>; rel="api-catalog"` {
		t.Errorf("HEAD: %d %q %q", head.status, head.header.Get("Link"), head.raw)
	}
}

func TestWellKnownAPICatalog(t *testing.T) {
	h := startPaid(t, sdPkg, testPkg)
	checkAPICatalog(t, h.URL, []string{"stream-divergence", "test-family"}, true)
	head := do(t, "HEAD", h.URL+"/.well-known/x402", nil, nil)
	if head.status != 200 || len(head.raw) != 0 || head.header.Get("Content-Type") != "application/json" || !strings.Contains(head.header.Get("Link"), `rel="api-catalog"`) {
		t.Errorf("HEAD /.well-known/x402: %d %v", head.status, head.header)
	}
}

// A host that takes no payment has no x402 capability: no manifest
// (404), no link to one, no payment member in its catalog; its API
// catalog is still served.
func TestWellKnownWithoutPayments(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, sdPkg)
	for _, method := range []string{"GET", "HEAD"} {
		if r := do(t, method, h.URL+"/.well-known/x402", nil, nil); r.status != 404 {
			t.Errorf("%s /.well-known/x402 without payments: %d", method, r.status)
		}
	}
	checkAPICatalog(t, h.URL, []string{"stream-divergence"}, false)
	cat := do(t, "GET", h.URL+"/", nil, nil)
	if _, ok := cat.json["payment"]; ok || cat.json["api_catalog"] != "/.well-known/api-catalog" {
		t.Errorf("the catalog without payments: payment %v, api_catalog %v", cat.json["payment"], cat.json["api_catalog"])
	}
	page := string(do(t, "GET", h.URL+"/", nil, map[string]string{"Accept": "text/html"}).raw)
	if strings.Contains(page, "Solana node") {
		t.Error("the catalog page speaks of a Solana node on a host that takes no payment")
	}
}
