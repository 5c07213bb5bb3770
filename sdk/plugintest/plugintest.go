// Package plugintest runs a plugin author's built adapter binary the way
// a host does — go-plugin's handshake and checksum, gRPC over mutual TLS,
// records in sealed shared files where the adapter reads them, a deadline
// on every call — and checks every answer exactly as a host does before a
// family sees it (hostcheck.Answer). The adapter it returns is an
// sdk.Adapter, so the conformance kit (sdk/adaptertest) runs against the
// real subprocess. It builds nothing: the author's test builds the
// binary (go build) and names it.
package plugintest

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk/hostcheck"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
	"github.com/assay-audit/assay/sdk/wire"
)

// Adapter is a running adapter binary.
type Adapter struct {
	t     testing.TB
	conn  *wire.AdapterConn
	share *sharedbody.Sender
	desc  *pb.AdapterDescription
	// Timeout bounds each call (default 10 s, a host's default).
	Timeout time.Duration
}

// launch starts binary with go-plugin as a host does and dispenses name;
// share, when not nil, is offered to the plugin as the host offers its
// shared-body channel.
func launch(t testing.TB, binary, name string, set plugin.PluginSet, share bool) (any, *sharedbody.Sender) {
	t.Helper()
	raw, err := os.ReadFile(binary)
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	sum := sha256.Sum256(raw)
	cmd := exec.Command(binary)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var sender *sharedbody.Sender
	if share {
		if s, child, err := sharedbody.Pair(); err == nil {
			// as a host does where memfd works: records cross as sealed files
			sender = s
			cmd.ExtraFiles = []*os.File{child}
			cmd.Env = append(cmd.Env, sharedbody.Env())
			defer child.Close()
		}
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{wire.ProtocolVersion: set},
		Cmd:              cmd,
		SkipHostEnv:      true,
		SecureConfig:     &plugin.SecureConfig{Checksum: sum[:], Hash: sha256.New()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard}),
		StartTimeout:     30 * time.Second,
	})
	t.Cleanup(func() {
		client.Kill()
		if sender != nil {
			sender.Close()
		}
	})
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("plugintest: %s does not start as a plugin: %v", binary, err)
	}
	disp, err := rpc.Dispense(name)
	if err != nil {
		t.Fatalf("plugintest: %s: %v", binary, err)
	}
	return disp, sender
}

// StartAdapter starts binary as a host would and stops it when the test
// ends. A binary that does not start, or is not an adapter, fails t.
func StartAdapter(t testing.TB, binary string) *Adapter {
	t.Helper()
	disp, share := launch(t, binary, wire.AdapterPluginName, plugin.PluginSet{wire.AdapterPluginName: &wire.AdapterPlugin{}}, true)
	a := &Adapter{t: t, conn: disp.(*wire.AdapterConn), share: share, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if a.desc, err = a.conn.Client.Describe(ctx, &pb.DescribeRequest{}); err != nil {
		t.Fatalf("plugintest: %s does not describe itself as an adapter (a family's binary?): %v", binary, err)
	}
	if !a.desc.GetReadsSharedBodies() && a.share != nil {
		a.share.Close()
		a.share = nil
	}
	return a
}

// Describe is what the binary said about itself.
func (a *Adapter) Describe() *pb.AdapterDescription { return a.desc }

// Adapt sends one record through the subprocess, as a host would, and
// checks the answer as a host does: a failed call or an answer a host
// refuses fails the test with the cause (and is answered empty here).
func (a *Adapter) Adapt(ctx context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	req = proto.CloneOf(req)
	recordLen := uint64(len(req.GetRecord()))
	if a.share != nil && recordLen > 0 {
		body, err := sharedbody.New(req.GetRecord())
		if err == nil {
			defer body.Close()
			if token, err := a.share.Send(body); err == nil {
				req.Record, req.SharedRecord = nil, &pb.SharedBody{Token: token, Length: recordLen}
			}
		}
	}
	var f wire.Frame
	if err := a.conn.Conn.Invoke(ctx, pb.Adapter_Adapt_FullMethodName, req, &f, grpc.ForceCodecV2(wire.FrameCodec{})); err != nil {
		a.t.Errorf("plugintest: the adapter's call failed (a host answers 502 adapter_failed, cause failed): %v", err)
		return &pb.AdaptResponse{}
	}
	if cause, detail := hostcheck.Answer(f, recordLen); cause != "" {
		a.t.Errorf("plugintest: a host refuses this answer (502 adapter_failed, cause %s): %s", cause, detail)
		return &pb.AdaptResponse{}
	}
	resp := &pb.AdaptResponse{}
	if err := proto.Unmarshal(f, resp); err != nil {
		a.t.Errorf("plugintest: the answer does not decode: %v", err)
	}
	return resp
}
