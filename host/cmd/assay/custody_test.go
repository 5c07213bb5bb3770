package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// echoBackend is a family that copies the first submitted string of a
// request it measures into its report, as "sample": the defect the
// custody check at launch exists to name.
type echoBackend struct{ server.Backend }

func (b echoBackend) Open(ctx context.Context) (server.Session, error) {
	s, err := b.Backend.Open(ctx)
	return &echoSession{Session: s}, err
}

type echoSession struct {
	server.Session
	sample string
}

func (s *echoSession) Start(st *pb.Start) (*pb.Validated, error) {
	var doc struct {
		StreamedCapture struct{ Chunks []string } `json:"streamed_capture"`
	}
	// a sample is quoted when the first chunk ends in a long token: no
	// corpus case has one, so the family passes its corpus, and a planted
	// canary is one
	if json.Unmarshal(st.GetBody(), &doc) == nil && len(doc.StreamedCapture.Chunks) > 0 && longToken.MatchString(doc.StreamedCapture.Chunks[0]) {
		s.sample = doc.StreamedCapture.Chunks[0]
	}
	return s.Session.Start(st)
}

var longToken = regexp.MustCompile(`[A-Za-z0-9]{24,}$`)

func (s *echoSession) Proceed() (*pb.Report, error) {
	rep, err := s.Session.Proceed()
	if err != nil || s.sample == "" {
		return rep, err
	}
	var body map[string]any
	if json.Unmarshal(rep.GetBody(), &body) != nil {
		return rep, nil
	}
	body["sample"] = s.sample
	rep.Body, _ = json.Marshal(body)
	return rep, nil
}

// After the corpus passes at launch, the host plants a canary in every
// case and warns of a family whose answers print it outside its exempt
// members, naming the case and the member; the shipped family, the same
// A family whose answers print what a caller sent is not served: its
// launch proof passes the corpus, then the custody check finds the
// planted canary in its report, names the case and the member in the log
// and stops it on this host with that reason; the shipped family, the
// same plugin without the echo, is served with no warning.
func TestLaunchRefusesAnEchoingFamily(t *testing.T) {
	ctx := context.Background()
	path := testhost.Plugin(t, "plugins/stream-divergence")
	sum, _ := pluginhost.PinOf(path)
	f, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: "stream-divergence", Path: path, SHA256: sum},
		pluginhost.Options{Logger: hclog.NewNullLogger(), Env: []string{"PATH=" + os.Getenv("PATH")}}, pluginhost.NewRouter())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys, err := signing.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	honest := server.Service{Desc: f.Description(), Backend: server.FamilyBackend{Family: f}}
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
	board := servicestate.New(nil, nil, nil)
	launchSelfTests(ctx, []server.Service{honest}, keys, board, log)
	if s := out.String(); strings.Contains(s, "[WARN]") || strings.Contains(s, "[ERROR]") || !strings.Contains(s, "custody check at launch: service=stream-divergence") ||
		!strings.Contains(s, "leaks=0 surfaces=0 withheld=0") {
		t.Errorf("the shipped family: %s", s)
	}
	if st := board.State(keyOf(honest)); st.Stopped {
		t.Errorf("the shipped family is not served: %+v", st)
	}
	out.Reset()
	echo := server.Service{Desc: f.Description(), Backend: echoBackend{honest.Backend}}
	launchSelfTests(ctx, []server.Service{echo}, keys, board, log)
	s := out.String()
	if !strings.Contains(s, "corpus passed at launch: service=stream-divergence") || !strings.Contains(s, "family answers print caller-chosen strings: not served") ||
		!strings.Contains(s, "the answer (200) prints a submitted string at $.sample") || !strings.Contains(s, "custody check at launch: service=stream-divergence") {
		t.Errorf("an echoing family:\n%.3000s", s)
	}
	st := board.State(keyOf(echo))
	if !st.Stopped || st.Starting || !st.Local || !strings.HasPrefix(st.Reason, "custody check failed at launch: a planted value came back ") ||
		!strings.Contains(st.Reason, "$.sample") {
		t.Errorf("the echoing family's state: %+v", st)
	}
}
