// Package pluginhost is the client side of the plugin system: it starts each
// configured plugin binary pinned by SHA-256, keeps it running (restarting a
// crashed one with backoff), and opens one stream per request to a family.
package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Spec names one plugin binary and its pin.
type Spec struct {
	// Name is how the host refers to the plugin (logs, metrics).
	Name string
	// Path is the binary; a relative path is resolved against Dir.
	Path string
	// SHA256 is the binary's hex digest. Required: an unpinned plugin never
	// starts.
	SHA256 string
}

// Options tune every plugin the host starts.
type Options struct {
	Logger hclog.Logger
	// Dir is the plugin directory; no plugin path may leave it.
	Dir string
	// StartTimeout bounds one start (handshake + Describe).
	StartTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between restarts.
	MinBackoff, MaxBackoff time.Duration
	// Env is the environment a plugin runs with; the host's own environment
	// is never passed on.
	Env []string
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 20 * time.Second
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 10 * time.Second
	}
}

// Errors a request can meet at the plugin boundary. None carries anything
// from the request.
var (
	ErrChecksum    = errors.New("plugin binary does not match its pinned SHA-256")
	ErrUnavailable = errors.New("plugin unavailable")
	ErrDeadline    = errors.New("plugin call deadline exceeded")
	ErrFailed      = errors.New("plugin failed the request")
	ErrClosed      = errors.New("plugin host closed")
)

// Family is one supervised family plugin.
type Family struct {
	spec Spec
	opts Options
	log  hclog.Logger
	desc *pb.FamilyDescription

	mu       sync.Mutex
	client   *plugin.Client
	conn     *sdk.FamilyConn
	ready    chan struct{} // closed when conn is usable
	restarts int
	closed   bool

	stop chan struct{}
	done chan struct{}
}

// StartFamily starts a family plugin, reads its description, and supervises
// it until Close. A checksum mismatch or failed handshake is an error here:
// the host refuses to load the plugin.
func StartFamily(ctx context.Context, spec Spec, opts Options) (*Family, error) {
	opts.defaults()
	f := &Family{
		spec:  spec,
		opts:  opts,
		log:   opts.Logger.Named("plugin").With("plugin", spec.Name),
		ready: make(chan struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	client, conn, err := f.launch()
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	desc, err := conn.Client.Describe(dctx, &pb.DescribeRequest{})
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("plugin %s: describe: %w", spec.Name, err)
	}
	f.desc = desc
	f.client, f.conn = client, conn
	close(f.ready)
	go f.supervise()
	return f, nil
}

// Description is what the plugin said about itself at first start.
func (f *Family) Description() *pb.FamilyDescription { return f.desc }

// Restarts counts restarts since start.
func (f *Family) Restarts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restarts
}

// resolve returns the binary's absolute path, refusing one that leaves the
// plugin dir.
func (f *Family) resolve() (string, error) {
	p := f.spec.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.opts.Dir, p)
	}
	p = filepath.Clean(p)
	if f.opts.Dir != "" {
		dir, err := filepath.Abs(f.opts.Dir)
		if err != nil {
			return "", fmt.Errorf("plugin dir: %w", err)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("plugin path: %w", err)
		}
		if rel, err := filepath.Rel(dir, abs); err != nil || rel == ".." || filepath.IsAbs(rel) || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
			return "", fmt.Errorf("plugin %s: path leaves the plugin dir", f.spec.Name)
		}
		p = abs
	}
	return p, nil
}

// launch starts one process and returns its connection.
func (f *Family) launch() (*plugin.Client, *sdk.FamilyConn, error) {
	path, err := f.resolve()
	if err != nil {
		return nil, nil, err
	}
	sum, err := hex.DecodeString(f.spec.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, nil, fmt.Errorf("plugin %s: sha256 pin must be 64 hex digits", f.spec.Name)
	}
	cmd := exec.Command(path) // never through a shell: the pin covers this file
	cmd.Env = append([]string{}, f.opts.Env...)
	// Own process group (a terminal's ^C reaches the host, which drains and
	// stops plugins in order); SIGKILL when the host dies, so a killed host
	// leaves no plugin behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{sdk.ProtocolVersion: {sdk.FamilyPluginName: &sdk.FamilyPlugin{}}},
		Cmd:              cmd,
		SkipHostEnv:      true,
		// A fresh hash every start: Check never resets the one it is given.
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  sdk.DialOptions(),
		Logger:           clientLogger{f.log},
		StartTimeout:     f.opts.StartTimeout,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			f.log.Error("refusing to load plugin: binary does not match its pinned SHA-256", "path", path)
			return nil, nil, fmt.Errorf("plugin %s: %w", f.spec.Name, ErrChecksum)
		}
		return nil, nil, fmt.Errorf("plugin %s: start: %w", f.spec.Name, err)
	}
	raw, err := rpc.Dispense(sdk.FamilyPluginName)
	if err != nil {
		client.Kill()
		return nil, nil, fmt.Errorf("plugin %s: dispense: %w", f.spec.Name, err)
	}
	conn, ok := raw.(*sdk.FamilyConn)
	if !ok {
		client.Kill()
		return nil, nil, fmt.Errorf("plugin %s: not a family plugin", f.spec.Name)
	}
	return client, conn, nil
}

// supervise restarts the plugin whenever its process exits, with
// exponential backoff reset after a stable minute. It is the only restarter,
// so however many requests notice a crash there is one restart.
func (f *Family) supervise() {
	defer close(f.done)
	backoff := f.opts.MinBackoff
	for {
		f.mu.Lock()
		exited, since := f.conn.Exited, time.Now()
		f.mu.Unlock()
		select {
		case <-f.stop:
			return
		case <-exited:
		}
		f.mu.Lock()
		f.ready = make(chan struct{})
		f.client.Kill()
		f.mu.Unlock()
		if time.Since(since) > time.Minute {
			backoff = f.opts.MinBackoff
		}
		f.log.Warn("plugin exited; restarting", "backoff_ms", backoff.Milliseconds())
		for {
			select {
			case <-f.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, f.opts.MaxBackoff)
			client, conn, err := f.launch()
			if err != nil {
				f.log.Error("plugin restart failed", "error", err)
				continue
			}
			f.mu.Lock()
			f.client, f.conn = client, conn
			f.restarts++
			close(f.ready)
			f.mu.Unlock()
			break
		}
	}
}

// current waits until the plugin is usable or ctx ends.
func (f *Family) current(ctx context.Context) (*sdk.FamilyConn, error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		ready, conn := f.ready, f.conn
		f.mu.Unlock()
		select {
		case <-ready:
			select {
			case <-conn.Exited:
				// gone, the supervisor has not noticed yet: wait for it
				time.Sleep(5 * time.Millisecond)
				continue
			default:
			}
			return conn, nil
		case <-ctx.Done():
			return nil, classify(ctx, nil, ctx.Err())
		}
	}
}

// Close stops supervising and kills the plugin.
func (f *Family) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	close(f.stop)
	f.mu.Unlock()
	<-f.done
	f.mu.Lock()
	client := f.client
	f.mu.Unlock()
	client.Kill()
}

// Session is one request's stream to a family.
type Session struct {
	conn   *sdk.FamilyConn
	ctx    context.Context
	cancel context.CancelFunc
	stream pb.Family_RunClient
}

// Open starts a request's stream. ctx carries the request's deadline.
func (f *Family) Open(ctx context.Context) (*Session, error) {
	conn, err := f.current(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := conn.Client.Run(sctx)
	if err != nil {
		cancel()
		return nil, classify(ctx, conn, err)
	}
	return &Session{conn: conn, ctx: ctx, cancel: cancel, stream: stream}, nil
}

// Start sends the request and returns the family's validation.
func (s *Session) Start(start *pb.Start) (*pb.Validated, error) {
	if err := s.stream.Send(&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: start}}); err != nil {
		return nil, s.fail(err)
	}
	msg, err := s.stream.Recv()
	if err != nil {
		return nil, s.fail(err)
	}
	v := msg.GetValidated()
	if v == nil {
		return nil, fmt.Errorf("%w: expected validated", ErrFailed)
	}
	return v, nil
}

// Proceed lets the family measure and returns its report.
func (s *Session) Proceed() (*pb.Report, error) {
	if err := s.stream.Send(&pb.HostToFamily{Msg: &pb.HostToFamily_Proceed{Proceed: &pb.Proceed{}}}); err != nil {
		return nil, s.fail(err)
	}
	msg, err := s.stream.Recv()
	if err != nil {
		return nil, s.fail(err)
	}
	r := msg.GetReport()
	if r == nil {
		return nil, fmt.Errorf("%w: expected report", ErrFailed)
	}
	return r, nil
}

// Close ends the stream; a family waiting for Proceed sees the end and
// drops what it parsed.
func (s *Session) Close() {
	_ = s.stream.CloseSend()
	s.cancel()
}

func (s *Session) fail(err error) error {
	if errors.Is(err, io.EOF) {
		// the server closed the stream: the real status is on Recv
		_, err = s.stream.Recv()
	}
	return classify(s.ctx, s.conn, err)
}

// classify maps a transport error to the boundary's errors: a deadline, a
// plugin that went away, or a plugin that failed the request.
func classify(ctx context.Context, conn *sdk.FamilyConn, err error) error {
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w", ErrDeadline)
	}
	if conn != nil {
		select {
		case <-conn.Exited:
			return fmt.Errorf("%w: process exited", ErrUnavailable)
		default:
		}
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w", ErrDeadline)
	case codes.Unavailable, codes.Canceled:
		return fmt.Errorf("%w: %s", ErrUnavailable, status.Code(err))
	}
	return fmt.Errorf("%w: %s", ErrFailed, status.Code(err))
}

// PinOf returns the hex SHA-256 of a file: how `make build` writes the
// default config's pins.
func PinOf(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("pin: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// PID is the running plugin process's id (0 while restarting): for
// operators' diagnostics and the crash tests.
func (f *Family) PID() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rc := f.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}
