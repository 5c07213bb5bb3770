package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// grafanaDir is where the compose fleet's Grafana is provisioned from.
const grafanaDir = "../../deploy/grafana"

type dashboard struct {
	UID           string      `json:"uid"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []dashVar `json:"list"`
	} `json:"templating"`
}

type dashRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashPanel struct {
	ID          int          `json:"id"`
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Datasource  *dashRef     `json:"datasource"`
	Targets     []dashTarget `json:"targets"`
	Panels      []dashPanel  `json:"panels"` // a collapsed row's
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type dashTarget struct {
	RefID      string   `json:"refId"`
	Expr       string   `json:"expr"`
	Datasource *dashRef `json:"datasource"`
}

type dashVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Definition string          `json:"definition"`
	Query      json.RawMessage `json:"query"`
	Datasource *dashRef        `json:"datasource"`
}

// selector is a query variable's PromQL: the series selector of its
// label_values(selector, label), or the query itself.
func (v dashVar) selector() string {
	q := v.Definition
	var s string
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &s) == nil && s != "" {
		q = s
	} else if json.Unmarshal(v.Query, &o) == nil && o.Query != "" {
		q = o.Query
	}
	if inner, ok := strings.CutPrefix(q, "label_values("); ok {
		inner = strings.TrimSuffix(strings.TrimSpace(inner), ")")
		if i := strings.LastIndex(inner, ","); i >= 0 {
			return strings.TrimSpace(inner[:i])
		}
		return "" // label_values(label): no metric
	}
	return q
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(grafanaDir, "dashboards", "assay.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("deploy/grafana/dashboards/assay.json: %v", err)
	}
	return d
}

// dashPanels is every panel that shows data: rows left out, a collapsed
// row's panels included.
func dashPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		if p.Type != "row" {
			out = append(out, p)
		}
		out = append(out, dashPanels(p.Panels)...)
	}
	return out
}

// provisionedUID is the uid of the data source Grafana is provisioned with.
func provisionedUID(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(grafanaDir, "provisioning", "datasources", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	uids := regexp.MustCompile(`(?m)^\s+uid:\s*["']?([^"'\s]+)`).FindAllStringSubmatch(src, -1)
	if len(uids) != 1 {
		t.Fatalf("provisioning/datasources/prometheus.yml: %d uids, want one data source with a fixed uid", len(uids))
	}
	if !regexp.MustCompile(`(?m)^\s+type:\s*prometheus\s*$`).MatchString(src) ||
		!regexp.MustCompile(`(?m)^\s+url:\s*http://prometheus:9090\s*$`).MatchString(src) {
		t.Error("provisioning/datasources/prometheus.yml: the data source is not the compose file's Prometheus (type prometheus, url http://prometheus:9090)")
	}
	return uids[0][1]
}

// exportedFamilies is a host's exposition with one sample of every family,
// and each family's type by the name its # TYPE line gives.
func exportedFamilies(t *testing.T) (string, map[string]string) {
	t.Helper()
	m := New()
	m.Request("stream-divergence", "compare", 200, 20*time.Millisecond)
	m.Paid("stream-divergence")
	m.Paid("lifecycle-analytics")
	m.Free("stream-divergence")
	m.Redelivered("stream-divergence")
	m.Refusal("stream-divergence", "code")
	m.CouldNotMeasure("stream-divergence", "kind")
	m.FreeRefused("stream-divergence", "interval")
	m.Settlement("stream-divergence", "settled", time.Second)
	m.RPCError("getBalance")
	m.Claims("st", func(string) (int, time.Time, bool) { return 1, time.Time{}, true }, time.Now)
	m.PaymentPreflight(func() (int, bool) { return 0, true })
	m.Ready(func() bool { return true })
	m.BuildInfo("v1.0.0")
	m.FeePayerBalance(func() (uint64, bool) { return 50_000_000, true })
	m.AdapterFault("f", "crash")
	m.SelfCheckFailed("stream-divergence", "rule")
	m.LedgerWriteFailed("stream-divergence")
	m.LedgerLineRefused("stream-divergence")
	m.PluginRestarts("adapter", "f", func() int { return 1 })
	m.StoreGroups(func() (uint64, uint64) { return 1, 2 })
	m.Admission("stream-divergence", "op", func() int { return 1 }, func() int { return 0 })
	m.Stopped("stream-divergence", "c/v1", "1", func() bool { return false })
	rec := httptest.NewRecorder()
	m.Handler("").ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	types := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				types[f[0]] = f[1]
			}
		}
	}
	return string(body), types
}

// promqlToken is PromQL's tokens, near enough to find metric names:
// strings, comments, Grafana's variables, numbers (and durations),
// identifiers, and any other character alone.
var promqlToken = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`" +
	`|#[^\n]*|\$\{[^}]*\}|\$\w+|[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?[a-zA-Z]*|[a-zA-Z_:][a-zA-Z0-9_:]*|\S`)

// promqlNames is the metric names an expression selects. It fails on
// unbalanced brackets and on a query that selects no metric.
func promqlNames(expr string) ([]string, error) {
	var toks []string
	for _, tok := range promqlToken.FindAllString(expr, -1) {
		if !strings.HasPrefix(tok, "#") {
			toks = append(toks, tok)
		}
	}
	opener := map[string]string{")": "(", "}": "{", "]": "["}
	var stack []string
	for _, tok := range toks {
		switch tok {
		case "(", "{", "[":
			stack = append(stack, tok)
		case ")", "}", "]":
			if len(stack) == 0 || stack[len(stack)-1] != opener[tok] {
				return nil, fmt.Errorf("an unbalanced %q", tok)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("%q never closed", stack[len(stack)-1])
	}
	// skip is the index after the bracket that closes the one at i
	skip := func(i int) int {
		depth := 0
		for j := i; j < len(toks); j++ {
			switch toks[j] {
			case "(", "{", "[":
				depth++
			case ")", "}", "]":
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(toks)
	}
	grouping := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	keyword := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true}
	for _, agg := range []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"} {
		keyword[agg] = true // an aggregation, its by (...) before its (...)
	}
	ident := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	var names []string
	for i := 0; i < len(toks); {
		tok := toks[i]
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case tok == "{" || tok == "[": // label matchers, a range
			i = skip(i)
			continue
		case grouping[strings.ToLower(tok)] && next == "(": // a label list
			i = skip(i + 1)
			continue
		case !ident.MatchString(tok) || keyword[strings.ToLower(tok)] || next == "(": // a function
		default:
			names = append(names, tok)
		}
		i++
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no metric selected")
	}
	return names, nil
}

// exportedAs says whether a host exports the metric a query names: a
// family under its # TYPE name (a counter with its _total), a histogram
// by its _bucket, _sum and _count series, or Prometheus's own up.
func exportedAs(name string, types map[string]string) error {
	if name == "up" {
		return nil
	}
	switch types[name] {
	case "":
	case "histogram", "summary":
		return fmt.Errorf("%s is a %s: a query names its _bucket, _sum or _count series", name, types[name])
	default:
		return nil
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if typ := types[base]; typ == "histogram" || (typ == "summary" && suffix != "_bucket") {
				return nil
			}
		}
	}
	return fmt.Errorf("no host exports %s", name)
}

// Every panel of the shipped dashboard queries the provisioned
// Prometheus, and every metric it names is one a host exports under that
// name: a renamed metric would leave a panel that shows "No data".
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	d := loadDashboard(t)
	uid := provisionedUID(t)
	_, types := exportedFamilies(t)
	if d.UID == "" || d.SchemaVersion < 39 {
		t.Errorf("the dashboard has uid %q and schemaVersion %d: want a fixed uid and a current Grafana's schema (39 or later)", d.UID, d.SchemaVersion)
	}
	check := func(where, expr string) {
		names, err := promqlNames(expr)
		if err != nil {
			t.Errorf("%s: %v in %q", where, err, expr)
			return
		}
		for _, name := range names {
			if err := exportedAs(name, types); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	panels := dashPanels(d.Panels)
	if len(panels) < 12 {
		t.Fatalf("%d panels read: the check is not reading the dashboard", len(panels))
	}
	ids := map[int]bool{}
	for _, p := range panels {
		where := fmt.Sprintf("panel %q", p.Title)
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("%s: id %d is not unique", where, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource == nil || p.Datasource.UID != uid || p.Datasource.Type != "prometheus" {
			t.Errorf("%s: its data source is %+v, want the provisioned prometheus %q", where, p.Datasource, uid)
		}
		if p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("%s: no unit", where)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no query", where)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != uid {
				t.Errorf("%s, query %s: its data source is %q, want %q", where, tg.RefID, tg.Datasource.UID, uid)
			}
			check(fmt.Sprintf("%s, query %s", where, tg.RefID), tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		if v.Datasource == nil || v.Datasource.UID != uid {
			t.Errorf("variable $%s: its data source is %+v, want %q", v.Name, v.Datasource, uid)
		}
		if sel := v.selector(); sel != "" {
			check("variable $"+v.Name, sel)
		}
	}
}

// The dashboard shows what an operator watches (docs/operators.md), each
// panel from the metric that says it, in its unit.
func TestDashboardCoversTheFleet(t *testing.T) {
	byTitle := map[string]dashPanel{}
	for _, p := range dashPanels(loadDashboard(t).Panels) {
		byTitle[p.Title] = p
	}
	for _, want := range []struct {
		title, unit string
		queries     []string
	}{
		{"Requests by service and status", "reqps", []string{"assay_requests_total", "by (service, status)"}},
		{"Paid reports by service", "", []string{`assay_calls_total{tier="paid"`}},
		{"Revenue in USDC (selected range)", "suffix: USDC", []string{`assay_calls_total{tier="paid"`, "vector("}},
		{"Payment claims by state", "", []string{"max by (store, state) (assay_payment_claims{"}},
		{"Oldest payment claim's age", "s", []string{"max by (store, state) (assay_payment_claim_oldest_seconds"}},
		{"Fee payer's SOL", "suffix: SOL", []string{"assay_fee_payer_lamports", "/ 1e9"}},
		{"Payment preflight problems", "", []string{"assay_payment_preflight_problems"}},
		{"Adapter faults by format and cause", "", []string{"assay_adapter_faults_total"}},
		{"Plugin restarts", "", []string{"assay_plugin_restarts_total"}},
		{"Latency p50 by service", "s", []string{"histogram_quantile(0.5, sum by (service, le) (rate(assay_request_duration_seconds_bucket"}},
		{"Latency p99 by service", "s", []string{"histogram_quantile(0.99, sum by (service, le) (rate(assay_request_duration_seconds_bucket"}},
		{"Ready per host (assay_ready)", "", []string{"assay_ready"}},
		{"Scraped per host (up)", "", []string{`up{job="assay"`}},
	} {
		p, ok := byTitle[want.title]
		if !ok {
			t.Errorf("no panel %q", want.title)
			continue
		}
		var exprs []string
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
		all := strings.Join(exprs, "\n")
		for _, q := range want.queries {
			if !strings.Contains(all, q) {
				t.Errorf("panel %q does not query %s: %q", want.title, q, all)
			}
		}
		if want.unit != "" && p.FieldConfig.Defaults.Unit != want.unit {
			t.Errorf("panel %q: unit %q, want %q", want.title, p.FieldConfig.Defaults.Unit, want.unit)
		}
	}
}

// priceEntry is one row of a revenue query's price table.
var priceEntry = regexp.MustCompile(`label_replace\(vector\(([0-9.]+)\),\s*"service",\s*"([^"]+)",\s*"",\s*""\)`)

// The host exports no revenue counter: the revenue panels multiply paid
// reports by each service's price, written in the query. That table is
// every served service's criteria price (price.usdc_units_per_call), so a
// repricing that forgets the dashboard fails here.
func TestDashboardRevenuePricesMatchCriteria(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join("..", "..", "criteria", "*", "criteria.json"))
	want := map[string]string{}
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Service string `json:"service"`
			Price   struct {
				Units *int64 `json:"usdc_units_per_call"`
			} `json:"price"`
		}
		if err := json.Unmarshal(raw, &c); err != nil || c.Service == "" || c.Price.Units == nil {
			t.Fatalf("%s: no service and price.usdc_units_per_call (%v)", doc, err)
		}
		want[c.Service] = strconv.FormatFloat(float64(*c.Price.Units)/1e6, 'f', -1, 64)
	}
	if len(want) < 4 {
		t.Fatalf("%d criteria documents read: the check is not reading criteria/", len(want))
	}
	tables := 0
	for _, p := range dashPanels(loadDashboard(t).Panels) {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "vector(") {
				continue
			}
			tables++
			got := map[string]string{}
			for _, m := range priceEntry.FindAllStringSubmatch(tg.Expr, -1) {
				f, _ := strconv.ParseFloat(m[1], 64)
				got[m[2]] = strconv.FormatFloat(f, 'f', -1, 64)
			}
			for service, price := range want {
				if got[service] != price {
					t.Errorf("panel %q, query %s: %s at %q USDC, its criteria say %s", p.Title, tg.RefID, service, got[service], price)
				}
			}
			for service := range got {
				if _, ok := want[service]; !ok {
					t.Errorf("panel %q, query %s: prices %s, which no criteria document serves", p.Title, tg.RefID, service)
				}
			}
		}
	}
	if tables == 0 {
		t.Error("no revenue query with a price table")
	}
}

// Grafana in compose reads the provisioning and the dashboard from where
// this folder puts them, read-only, with its UI on this machine only.
func TestGrafanaProvisionedAsMounted(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(grafanaDir, "provisioning", "dashboards", "assay.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+path:\s*(\S+)`).FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatal("provisioning/dashboards/assay.yml: no options.path")
	}
	compose, err := os.ReadFile(filepath.Join(grafanaDir, "..", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(compose)
	start := strings.Index(src, "\n  grafana:\n")
	if start < 0 {
		t.Fatal("deploy/compose.yaml: no grafana service")
	}
	block := src[start+1:]
	if end := regexp.MustCompile(`\n(\S|  \S)`).FindStringIndex(block[len("  grafana:\n"):]); end != nil {
		block = block[:len("  grafana:\n")+end[0]]
	}
	for _, want := range []string{
		"./grafana/provisioning/datasources:/etc/grafana/provisioning/datasources:ro",
		"./grafana/provisioning/dashboards:/etc/grafana/provisioning/dashboards:ro",
		"./grafana/dashboards:" + m[1] + ":ro",
		`"127.0.0.1:3000:3000"`,
		"GF_SECURITY_ADMIN_PASSWORD__FILE: /run/secrets/grafana_admin_password",
		`GF_AUTH_ANONYMOUS_ENABLED: "false"`,
	} {
		if !strings.Contains(block, want) {
			t.Errorf("deploy/compose.yaml: the grafana service lacks %s", want)
		}
	}
}

// promtool evaluates every query of the dashboard against a host's
// exposition (one host, an hour of scrapes): each returns a series, and
// the revenue panel's figures are paid reports times the price. Without
// promtool the test skips, unless ASSAY_REQUIRE_PROMTOOL is set.
func TestDashboardQueriesEvaluate(t *testing.T) {
	promtool := prometheusTool(t, "promtool", "the dashboard's queries are not evaluated")
	body, types := exportedFamilies(t)
	type series struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	const host = `instance="assay-a:9402",job="assay"`
	input := []series{{"up{" + host + "}", "1+0x60"}}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "assay_") {
			continue
		}
		i := strings.LastIndex(line, " ")
		sel, value := line[:i], line[i+1:]
		name, labels, ok := strings.Cut(sel, "{")
		if ok {
			sel = name + "{" + host + "," + labels
		} else {
			sel = name + "{" + host + "}"
		}
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && types[base] == "histogram" {
				family = base
			}
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		// counters rise by their value each minute; gauges hold it
		values := strconv.FormatFloat(v, 'f', -1, 64) + "+0x60"
		if typ := types[family]; typ == "counter" || typ == "histogram" {
			values = "0+" + strconv.FormatFloat(v, 'f', -1, 64) + "x60"
		}
		input = append(input, series{sel, values})
	}
	grafana := strings.NewReplacer(`"$instance"`, `".*"`, `"$service"`, `".+"`, "$__rate_interval", "5m", "$__range", "30m", "$__interval", "1m")
	type sample struct {
		Labels string  `json:"labels"`
		Value  float64 `json:"value"`
	}
	type exprTest struct {
		Expr       string   `json:"expr"`
		EvalTime   string   `json:"eval_time"`
		ExpSamples []sample `json:"exp_samples"`
	}
	var tests []exprTest
	returns := func(where, expr string) {
		tests = append(tests, exprTest{"# " + where + "\nabsent(" + grafana.Replace(expr) + ")", "60m", []sample{}})
	}
	d := loadDashboard(t)
	for _, p := range dashPanels(d.Panels) {
		for _, tg := range p.Targets {
			returns(fmt.Sprintf("panel %q, query %s", p.Title, tg.RefID), tg.Expr)
			if p.Title == "Revenue in USDC (selected range)" {
				// 30 paid reports each in the 30 minutes: stream-divergence
				// at 0.05, lifecycle-analytics at 0.02 (in cents); query A
				// by service, B their sum
				exp := []sample{{`{service="lifecycle-analytics"}`, 60}, {`{service="stream-divergence"}`, 150}}
				if tg.RefID == "B" {
					exp = []sample{{"{}", 210}}
				}
				tests = append(tests, exprTest{fmt.Sprintf("# panel %q, query %s, in cents\nround(100 * (%s))", p.Title, tg.RefID, grafana.Replace(tg.Expr)), "60m", exp})
			}
		}
	}
	for _, v := range d.Templating.List {
		if sel := v.selector(); v.Type == "query" && sel != "" {
			returns("variable $"+v.Name, sel)
		}
	}
	file, _ := json.MarshalIndent(map[string]any{
		"evaluation_interval": "1m",
		"tests":               []any{map[string]any{"interval": "1m", "input_series": input, "promql_expr_test": tests}},
	}, "", "  ")
	path := filepath.Join(t.TempDir(), "dashboard_test.yml")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules (each failure is a query that returns nothing, or revenue off): %v\n%s", err, out)
	}
	if len(tests) < 20 {
		t.Errorf("%d queries evaluated: the check is not reading the dashboard", len(tests))
	}
}
