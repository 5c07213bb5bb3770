package sdk

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// A shared body that never arrives costs the request an Unavailable
// status, and the plugin's log says so with the body's length and the
// wait: the host sees only the status.
func TestASharedBodyThatNeverArrivesIsLogged(t *testing.T) {
	sender, child, err := sharedbody.Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	defer child.Close()
	t.Setenv(sharedbody.EnvFD, strconv.Itoa(int(child.Fd())))
	bodies := sharedbody.FromEnv()
	if bodies == nil {
		t.Fatal("no receiver from the channel")
	}
	defer bodies.Close()
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err = takeShared(ctx, log, bodies, &pb.SharedBody{Token: 7, Length: 1234})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v, want Unavailable", err)
	}
	line := out.String()
	if !strings.Contains(line, `"@message":"shared body did not arrive before the deadline"`) ||
		!strings.Contains(line, `"length":1234`) || !strings.Contains(line, `"waited_ms":`) {
		t.Errorf("log: %s", line)
	}
}
