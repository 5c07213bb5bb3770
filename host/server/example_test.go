package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// A route's example body is the smallest JSON object a corpus case sends
// it and the family answers 200: a body_text case counts when its bytes
// are a JSON object; refused cases, other routes and texts that are not
// an object never do. Without one, the catalog's command sends the
// caller's own file, never a made-up body the family would refuse.
func TestCorpusExampleTakesBodyTextCases(t *testing.T) {
	corpus := []byte(`{"cases":[
		{"request":{"path":"/svc/op","body":{"refused":true,"long":"xxxxxxxxxxxxxxxxxxxx"}},"expect":{"status":400}},
		{"request":{"path":"/svc/op","body_text":"{ \"keys\" : [1, 2] }"},"expect":{"status":200}},
		{"request":{"path":"/svc/op","body_text":"not json"},"expect":{"status":200}},
		{"request":{"path":"/svc/op","body":{"keys":[1,2,3,4,5,6]}},"expect":{"status":200}},
		{"request":{"path":"/svc/precheck","body":{"k":1}},"expect":{"status":200}}]}`)
	if got := string(corpusExample(corpus, "/svc/op")); got != `{"keys":[1,2]}` {
		t.Errorf("the op's example: %s", got)
	}
	if got := corpusExample(corpus, "/svc/other"); got != nil {
		t.Errorf("a route no case sends: %s", got)
	}
	onlyRefused := []byte(`{"cases":[{"request":{"path":"/svc/op","body":{}},"expect":{"status":400}}]}`)
	if got := corpusExample(onlyRefused, "/svc/op"); got != nil {
		t.Errorf("a route whose cases are all refused: %s", got)
	}
	cmd := curlExample("/svc/op", nil, true)
	if strings.Contains(cmd, "-d '{}'") || !strings.Contains(cmd, "-d @body.json") {
		t.Errorf("the command without an example: %s", cmd)
	}
	if cmd := curlExample("/svc/op", []byte(`{"a":"it's"}`), false); !strings.Contains(cmd, `-d '{"a":"it'\''s"}'`) {
		t.Errorf("the command with an example: %s", cmd)
	}
}

// A paid route with no example is said once at start, naming the
// service and the op: the author's to fix with a corpus case.
func TestARouteWithoutAnExampleIsLogged(t *testing.T) {
	var log strings.Builder
	d := &pb.FamilyDescription{Service: "svc", CriteriaId: "svc/v1", BodyBytes: 1024, Ops: []*pb.Op{{Name: "op", PriceUsdcUnits: 1000}}}
	New(Config{Services: []Service{{Desc: d}}, Logger: hclog.New(&hclog.LoggerOptions{Output: &log})})
	if l := log.String(); !strings.Contains(l, "no case answered 200 on this paid route") || !strings.Contains(l, "service=svc op=op") {
		t.Errorf("the log: %s", l)
	}
}

// The format member's enum a caller reads (OpenAPI, and the schema the
// 402s carry) is the criteria's accepted formats, though the family's
// own schema lists none.
func TestTheFormatEnumIsTheCriterias(t *testing.T) {
	d := &pb.FamilyDescription{Service: "svc", CriteriaId: "svc/v1", BodyBytes: 1024, Ops: []*pb.Op{{Name: "op", PriceUsdcUnits: 1000}},
		RequestSchema: []byte(`{"type":"object","properties":{"fmt":{"type":"string"},"rec":{}}}`),
		FormatMember:  "fmt", RecordMember: "rec", Formats: []string{"lines", "gemini-generate-content"}}
	s := New(Config{Services: []Service{{Desc: d}}})
	want := `"enum":["lines","gemini-generate-content"]`
	if got := string(s.services["svc"].inputs["op"].Schema); !strings.Contains(got, want) {
		t.Errorf("the 402's input schema: %s", got)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components.Schemas[requestSchemaName("svc")].Properties["fmt"].Enum; strings.Join(got, ",") != "lines,gemini-generate-content" {
		t.Errorf("/openapi.json's enum for fmt: %v", got)
	}
}
