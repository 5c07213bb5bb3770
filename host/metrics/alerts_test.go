package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rulesDir is where the shipped Prometheus rules live.
const rulesDir = "../../deploy/prometheus"

// Every metric the shipped alert rules query is one a host exports, under
// that name: a renamed metric would leave an alert that never fires.
func TestAlertRulesQueryExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(rulesDir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	_, exported := exportedFamilies(t) // one of every sample: every family is in the exposition
	queried := regexp.MustCompile(`\bassay_[a-z_]+\b`).FindAllString(string(raw), -1)
	if len(queried) < 10 {
		t.Fatalf("the rules query %d assay metrics; expected the fleet's alerts", len(queried))
	}
	for _, name := range queried {
		if exported[name] == "" {
			t.Errorf("alerts.yml queries %s, which no host exports", name)
		}
	}
}

// promtool checks the compose fleet's Prometheus config and the rules, and runs their unit tests (alerts_test.yml:
// each alert fires on what should fire it, and a fleet's store-wide claim
// figures count once). Without promtool (Debian's prometheus package) the
// test skips, saying so, unless ASSAY_REQUIRE_PROMTOOL is set (CI).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool := prometheusTool(t, "promtool", "the alert rules are not checked")
	for _, args := range [][]string{{"check", "config", "prometheus.yml"}, {"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = rulesDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// prometheusTool is the path of a binary of Debian's prometheus package
// (promtool, prometheus). Without it the test skips, saying what goes
// unchecked, unless ASSAY_REQUIRE_PROMTOOL is set (CI installs it).
func prometheusTool(t *testing.T, name, unchecked string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("ASSAY_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("%s is not installed (apt-get install prometheus) and ASSAY_REQUIRE_PROMTOOL is set", name)
		}
		t.Skipf("%s is not installed (apt-get install prometheus): %s", name, unchecked)
	}
	return path
}
