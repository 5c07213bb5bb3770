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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/assay-audit/assay/sdk/hostcheck"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
	"github.com/assay-audit/assay/sdk/wire"
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
	// InlineBodies sends every body on the gRPC stream even to plugins
	// that read shared bodies (sdk/sharedbody): the switch for a platform
	// or sandbox without memfd, and how the tests run both paths.
	InlineBodies bool
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
	ErrChecksum = errors.New("plugin binary does not match its pinned SHA-256")
	// ErrWrongKind is a plugin binary of the other kind than its config says.
	ErrWrongKind = errors.New("plugin is not of the kind its config names")
	// ErrDescription: the family's description is one a host cannot serve
	// (hostcheck.Description): a route name that is no path segment, an
	// op called precheck, no body cap, a ledger field without a type.
	ErrDescription = errors.New("family description refused")
	ErrUnavailable = errors.New("plugin unavailable")
	ErrDeadline    = errors.New("plugin call deadline exceeded")
	ErrFailed      = errors.New("plugin failed the request")
	ErrClosed      = errors.New("plugin host closed")
)

// conn is what a dispensed plugin hands back: the host's handle, and a
// channel closed when its process exits.
type conn struct {
	handle any
	exited <-chan struct{}
	broker *plugin.GRPCBroker
	// share is this process's shared-body channel (nil: bodies go inline)
	share *sharedbody.Sender
	// calls counts this process's calls in flight (adapters), for telling
	// the one record that was in the process when it died from records
	// that shared its end
	calls *callCount
}

// callCount is one launched process's calls in flight, and how many were
// in flight when it died (the first failing call reads it: none of the
// failing calls has left yet).
type callCount struct {
	inFlight, atExit atomic.Int64
}

// enter counts a call in; the func returned counts it out.
func (c *callCount) enter() func() {
	if c == nil {
		return func() {}
	}
	c.inFlight.Add(1)
	return func() { c.inFlight.Add(-1) }
}

// mates is how many other calls were in the process when it died.
func (c *callCount) mates() int64 {
	if c == nil {
		return 0
	}
	c.atExit.CompareAndSwap(0, c.inFlight.Load())
	return max(c.atExit.Load()-1, 0)
}

// proc supervises one plugin binary of any kind: start pinned, restart on
// exit with backoff, hand out the live connection.
type proc struct {
	spec     Spec
	opts     Options
	log      hclog.Logger
	name     string // the plugin name to dispense
	set      plugin.PluginSet
	unwrap   func(any) (conn, bool)
	onLaunch func(conn) // per connection set-up (host services); may be nil

	mu       sync.Mutex
	client   *plugin.Client
	conn     conn
	ready    chan struct{} // closed when conn is usable
	restarts int
	closed   bool
	// restartAt is when the supervisor next launches the process (zero
	// while it runs)
	restartAt time.Time
	// served: the running process answered a call well since it launched
	served atomic.Bool
	// sent: the running process was sent a request since it launched. A
	// process that dies after that may have been killed by what it was
	// sent (a record that crashes it), not by being broken: its restart
	// is never delayed longer for it, so that one sender's crash records
	// cannot hold a format down for everyone
	sent atomic.Bool

	stop chan struct{}
	done chan struct{}
}

func newProc(spec Spec, opts Options, name string, set plugin.PluginSet, unwrap func(any) (conn, bool)) *proc {
	opts.defaults()
	return &proc{
		spec: spec, opts: opts, name: name, set: set, unwrap: unwrap,
		log:   opts.Logger.Named("plugin").With("plugin", spec.Name),
		ready: make(chan struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// killGroup kills a plugin's process group (its own: Setpgid) when its
// start failed. go-plugin's Kill ends the plugin's process and then waits
// for its output to close; a child still holding that output (a wrapper
// script's, say) would hold the host's start until the child exits.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// first launches the process once and, after describe succeeds, starts
// supervising it.
func (p *proc) first(ctx context.Context, describe func(context.Context, conn) error) error {
	client, c, err := p.launch()
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	if err := describe(dctx, c); err != nil {
		c.close()
		if rc := client.ReattachConfig(); rc != nil && rc.Pid > 0 {
			_ = syscall.Kill(-rc.Pid, syscall.SIGKILL) // as killGroup
		}
		client.Kill()
		if status.Code(err) == codes.Unimplemented {
			// the handshake passed, the service is not there: a binary of
			// the other kind (a family configured as an adapter, or the
			// reverse)
			return fmt.Errorf("plugin %s: %w: it does not serve the %s service (is its kind in the config right?)", p.spec.Name, ErrWrongKind, p.name)
		}
		return fmt.Errorf("plugin %s: describe: %w", p.spec.Name, err)
	}
	p.client, p.conn = client, c
	if p.onLaunch != nil {
		p.onLaunch(c)
	}
	close(p.ready)
	go p.supervise()
	return nil
}

// Restarts counts restarts since start.
func (p *proc) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// resolve returns the binary's absolute path, refusing one that leaves the
// plugin dir.
func (p *proc) resolve() (string, error) {
	path := p.spec.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.opts.Dir, path)
	}
	path = filepath.Clean(path)
	if p.opts.Dir != "" {
		dir, err := filepath.Abs(p.opts.Dir)
		if err != nil {
			return "", fmt.Errorf("plugin dir: %w", err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", fmt.Errorf("plugin path: %w", err)
		}
		if rel, err := filepath.Rel(dir, abs); err != nil || rel == ".." || filepath.IsAbs(rel) || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
			return "", fmt.Errorf("plugin %s: path leaves the plugin dir", p.spec.Name)
		}
		path = abs
	}
	return path, nil
}

// launch starts one process and returns its connection.
func (p *proc) launch() (*plugin.Client, conn, error) {
	path, err := p.resolve()
	if err != nil {
		return nil, conn{}, err
	}
	sum, err := hex.DecodeString(p.spec.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, conn{}, fmt.Errorf("plugin %s: sha256 pin must be 64 hex digits", p.spec.Name)
	}
	cmd := exec.Command(path) // never through a shell: the pin covers this file
	cmd.Env = append([]string{}, p.opts.Env...)
	// Own process group (a terminal's ^C reaches the host, which drains and
	// stops plugins in order); SIGKILL when the host dies, so a killed host
	// leaves no plugin behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var share *sharedbody.Sender
	if !p.opts.InlineBodies {
		// a platform without it just sends bodies inline
		if s, child, err := sharedbody.Pair(); err == nil {
			share = s
			cmd.ExtraFiles = []*os.File{child}
			cmd.Env = append(cmd.Env, sharedbody.Env())
			defer child.Close() // the plugin holds its own copy once started
		}
	}
	fail := func() {
		if share != nil {
			share.Close()
		}
		killGroup(cmd)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{wire.ProtocolVersion: p.set},
		Cmd:              cmd,
		SkipHostEnv:      true,
		// A fresh hash every start: Check never resets the one it is given.
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           clientLogger{p.log},
		StartTimeout:     p.opts.StartTimeout,
	})
	rpc, err := client.Client()
	if err != nil {
		fail()
		client.Kill()
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			p.log.Error("refusing to load plugin: binary does not match its pinned SHA-256", "path", path)
			return nil, conn{}, fmt.Errorf("plugin %s: %w", p.spec.Name, ErrChecksum)
		}
		return nil, conn{}, fmt.Errorf("plugin %s: start: %w", p.spec.Name, err)
	}
	raw, err := rpc.Dispense(p.name)
	if err != nil {
		fail()
		client.Kill()
		return nil, conn{}, fmt.Errorf("plugin %s: dispense: %w", p.spec.Name, err)
	}
	c, ok := p.unwrap(raw)
	if !ok {
		fail()
		client.Kill()
		return nil, conn{}, fmt.Errorf("plugin %s: not a %s plugin", p.spec.Name, p.name)
	}
	c.share = share
	return client, c, nil
}

// supervise restarts the plugin whenever its process exits. A process
// that had answered well, or had been sent a request, since its launch
// was ended by something it was sent (or by the machine): it is launched
// again after MinBackoff, however often that happens (each crash is some
// request's, and fails only that request). One that ends before it was
// sent anything is broken, and waits twice as long each time, up to
// MaxBackoff (reset after a stable minute). It is the only restarter, so
// however many requests notice a crash there is one restart.
func (p *proc) supervise() {
	defer close(p.done)
	backoff := p.opts.MinBackoff
	for {
		p.mu.Lock()
		exited, since := p.conn.exited, time.Now()
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-exited:
		}
		if sent := p.sent.Swap(false); p.served.Swap(false) || sent || time.Since(since) > time.Minute {
			backoff = p.opts.MinBackoff
		}
		p.mu.Lock()
		p.ready = make(chan struct{})
		p.restartAt = time.Now().Add(backoff)
		p.client.Kill()
		p.conn.close()
		p.mu.Unlock()
		p.log.Warn("plugin exited; restarting", "backoff_ms", backoff.Milliseconds())
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, p.opts.MaxBackoff)
			client, c, err := p.launch()
			if err != nil {
				p.log.Error("plugin restart failed", "error", err, "next_ms", backoff.Milliseconds())
				p.mu.Lock()
				p.restartAt = time.Now().Add(backoff)
				p.mu.Unlock()
				continue
			}
			if p.onLaunch != nil {
				p.onLaunch(c)
			}
			p.mu.Lock()
			p.client, p.conn = client, c
			p.restarts++
			p.restartAt = time.Time{}
			close(p.ready)
			p.mu.Unlock()
			break
		}
	}
}

// RestartingError is a plugin whose process is down: the request was not
// sent, and the plugin should be back after RetryAfter.
type RestartingError struct{ RetryAfter time.Duration }

func (e *RestartingError) Error() string {
	return fmt.Sprintf("%s: restarting, back in about %d ms", ErrUnavailable, e.RetryAfter.Milliseconds())
}

// Unwrap makes a RestartingError an ErrUnavailable.
func (e *RestartingError) Unwrap() error { return ErrUnavailable }

// launchAllowance is what a launch is counted to take in a RetryAfter:
// starting a Go plugin binary, its handshake and the describe call.
const launchAllowance = 500 * time.Millisecond

// live is the running process's connection without waiting: a process
// that is down is a *RestartingError at once, so a request never waits
// out a restart's backoff (an adapter's requests are answered 503 with
// Retry-After instead).
func (p *proc) live() (conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return conn{}, ErrClosed
	}
	select {
	case <-p.ready:
	default:
		return conn{}, &RestartingError{RetryAfter: max(time.Until(p.restartAt), 0) + launchAllowance}
	}
	select {
	case <-p.conn.exited:
		// gone, and the supervisor has not noticed yet
		return conn{}, &RestartingError{RetryAfter: p.opts.MinBackoff + launchAllowance}
	default:
	}
	return p.conn, nil
}

// current waits until the plugin is usable or ctx ends.
func (p *proc) current(ctx context.Context) (conn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return conn{}, ErrClosed
		}
		ready, c := p.ready, p.conn
		p.mu.Unlock()
		select {
		case <-ready:
			select {
			case <-c.exited:
				// gone, the supervisor has not noticed yet: wait for it
				time.Sleep(5 * time.Millisecond)
				continue
			default:
			}
			return c, nil
		case <-ctx.Done():
			return conn{}, classify(ctx, nil, ctx.Err())
		}
	}
}

// Close stops supervising and kills the plugin.
func (p *proc) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	p.mu.Unlock()
	<-p.done
	p.mu.Lock()
	client, c := p.client, p.conn
	p.mu.Unlock()
	client.Kill()
	c.close()
}

// close releases what the host holds for a connection besides go-plugin's
// client.
func (c conn) close() {
	if c.share != nil {
		c.share.Close()
	}
}

// SharedBodiesSent counts the bodies passed to the running process as
// shared files (0 when it takes them inline): for diagnostics and the
// tests that prove which path a request took.
func (p *proc) SharedBodiesSent() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn.share == nil {
		return 0
	}
	return p.conn.share.Sent()
}

// PID is the running plugin process's id (0 while restarting): for
// operators' diagnostics and the crash tests.
func (p *proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Family is one supervised family plugin.
type Family struct {
	*proc
	desc *pb.FamilyDescription
	// hostService is the broker id of the Host service on the current
	// connection (0 when the family needs no adapter).
	hostService uint32
	router      *Router
	bodies      *bodies
	measuring   *atomic.Int64
}

// bodies holds the bodies of a family's open requests, by token, so the
// family can have part of one adapted without sending it back (a record
// then crosses the process boundary once, host to adapter). A body is
// held from Start to Close: exactly as long as the request.
type bodies struct {
	mu   sync.Mutex
	next uint64
	held map[uint64]held
}

// held is one request's body: its bytes, or the sealed file it was shared
// in (then the host's heap need not keep it).
type held struct {
	bytes  []byte
	shared *sharedbody.Body
	// fault is where the request's first adapter fault is kept, for its
	// session to report (it outlives the hold)
	fault *faultSlot
}

// heldRange is part of a shared body, for an adapter.
type heldRange struct {
	body        *sharedbody.Body
	offset, len uint64
}

func (b *bodies) hold(body held) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	b.held[b.next] = body
	return b.next
}

// fault keeps a request's first adapter fault (a family's own record,
// sent without its body's token, has no request to report to).
func (b *bodies) fault(token uint64, f AdapterFault) {
	b.mu.Lock()
	body, ok := b.held[token]
	b.mu.Unlock()
	if ok && body.fault != nil {
		body.fault.CompareAndSwap(nil, &f)
	}
}

func (b *bodies) release(token uint64) {
	b.mu.Lock()
	delete(b.held, token)
	b.mu.Unlock()
}

// span is the part of a held body a span names: bytes, or a range of the
// shared file.
func (b *bodies) span(token uint64, span *pb.Span) ([]byte, *heldRange, bool) {
	b.mu.Lock()
	body, ok := b.held[token]
	b.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	if body.shared != nil {
		n, off, size := span.GetLength(), span.GetOffset(), uint64(body.shared.Len())
		if off > size || n > size-off {
			return nil, nil, false
		}
		return nil, &heldRange{body: body.shared, offset: off, len: n}, true
	}
	rec, err := wire.SpanOf(body.bytes, span)
	return rec, nil, err == nil
}

// OpenBodies is how many request bodies the family's host service holds
// now (one per open request): for diagnostics and the tests that prove
// none outlives its request.
func (f *Family) OpenBodies() int {
	f.bodies.mu.Lock()
	defer f.bodies.mu.Unlock()
	return len(f.bodies.held)
}

// StartFamily starts a family plugin, reads its description, and supervises
// it until Close. A checksum mismatch or failed handshake is an error here:
// the host refuses to load the plugin. router (may be nil) reaches the
// adapters for the formats the family lists.
func StartFamily(ctx context.Context, spec Spec, opts Options, router *Router) (*Family, error) {
	f := &Family{router: router, bodies: &bodies{held: map[uint64]held{}}, measuring: &atomic.Int64{}}
	f.proc = newProc(spec, opts, wire.FamilyPluginName, plugin.PluginSet{wire.FamilyPluginName: &wire.FamilyPlugin{}},
		func(raw any) (conn, bool) {
			fc, ok := raw.(*wire.FamilyConn)
			if !ok {
				return conn{}, false
			}
			return conn{handle: fc, exited: fc.Exited, broker: fc.Broker}, true
		})
	f.proc.onLaunch = f.serveHost
	err := f.proc.first(ctx, func(ctx context.Context, c conn) error {
		desc, err := c.handle.(*wire.FamilyConn).Client.Describe(ctx, &pb.DescribeRequest{})
		if err != nil {
			return err
		}
		if p := hostcheck.Description(desc); len(p) > 0 {
			// checked before a route exists: a name the router cannot
			// take would otherwise end the host when it registers
			return fmt.Errorf("%w: %s (%d problem(s) in all)", ErrDescription, p[0], len(p))
		}
		f.desc = desc
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Measuring is how many of the family's requests are past validation,
// their measurement asked for and not yet closed: for diagnostics and the
// tests that need requests to be measuring before they act.
func (f *Family) Measuring() int { return int(f.measuring.Load()) }

// Description is what the plugin said about itself at first start.
func (f *Family) Description() *pb.FamilyDescription { return f.desc }

// Session is one request's stream to a family.
type Session struct {
	conn   *wire.FamilyConn
	hostID uint32
	bodies *bodies
	token  uint64
	// share is the family's shared-body channel when it reads them;
	// shared is this request's body in a shared file, held until Close
	// (and closed then when the session made it)
	share      *sharedbody.Sender
	shared     *sharedbody.Body
	ownsShared bool
	measuring  *atomic.Int64 // the family's count, while proceeded
	proceeded  bool
	// early: Proceed went with Start (ProceedWithStart, ProceedIf);
	// proceedIf decides it once the Start is sent
	early     bool
	proceedIf func() bool
	fault     faultSlot // the request's first adapter fault
	served    *atomic.Bool
	ctx       context.Context
	cancel    context.CancelFunc
	stream    pb.Family_RunClient
}

// Open starts a request's stream. ctx carries the request's deadline.
func (f *Family) Open(ctx context.Context) (*Session, error) {
	c, err := f.current(ctx)
	if err != nil {
		return nil, err
	}
	fc := c.handle.(*wire.FamilyConn)
	f.mu.Lock()
	hostID := f.hostService
	f.mu.Unlock()
	sctx, cancel := context.WithCancel(ctx)
	f.sent.Store(true)
	stream, err := fc.Client.Run(sctx)
	if err != nil {
		cancel()
		return nil, classify(ctx, fc.Exited, err)
	}
	s := &Session{conn: fc, hostID: hostID, bodies: f.bodies, measuring: f.measuring, served: &f.served, ctx: ctx, cancel: cancel, stream: stream}
	if f.desc.GetReadsSharedBodies() {
		s.share = c.share
	}
	return s, nil
}

// Start sends the request and returns the family's validation.
// start is left as it came (a retry on a restarted plugin sends it again).
func (s *Session) Start(start *pb.Start) (*pb.Validated, error) {
	body := start.GetBody()
	if s.share != nil && len(body) >= SharedBodyMin && s.shared == nil {
		// where memfd is refused (a sandbox), the body goes inline
		if b, err := sharedbody.New(body); err == nil {
			s.shared, s.ownsShared = b, true
		}
	}
	return s.start(start, body)
}

// SharedBodyMin is the smallest body a session shares with a plugin as a
// sealed file: below it the bytes ride the gRPC stream, which costs less
// than making, sealing, passing, mapping and unmapping a file (an unmap
// interrupts every core the plugin runs on, a virtual machine's dearest
// interrupt). Measured in docs/benchmarks.md.
const SharedBodyMin = 64 << 10

// StartShared is Start for a body the host already holds in a sealed
// shared file (read there straight from the connection): start carries no
// body bytes. The file stays the caller's, to close after Close. A family
// that takes bodies inline is sent the file's bytes.
func (s *Session) StartShared(start *pb.Start, body *sharedbody.Body) (*pb.Validated, error) {
	var inline []byte
	if body.Len() > 0 {
		s.shared = body
	}
	if s.share == nil && body.Len() > 0 {
		inline = make([]byte, body.Len())
		if _, err := body.ReadAt(inline, 0); err != nil {
			return nil, fmt.Errorf("%w: shared body unavailable", ErrUnavailable)
		}
	}
	start.Body = inline
	defer func() { start.Body = nil }()
	return s.start(start, inline)
}

// TakesSharedBodies reports whether a request body sent now would cross
// as a shared file: the family reads them and its process has a channel.
// The host then reads the body straight into one (StartShared). It is a
// hint, never a wait: a session that finds otherwise sends the bytes.
func (f *Family) TakesSharedBodies() bool {
	if !f.desc.GetReadsSharedBodies() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn.share != nil
}

// start sends start, with s.shared (if any) as the body when the family
// reads shared files, else body inline.
func (s *Session) start(start *pb.Start, body []byte) (*pb.Validated, error) {
	start.HostServiceId = s.hostID
	if s.hostID != 0 && s.token == 0 {
		h := held{bytes: body, fault: &s.fault}
		if s.shared != nil {
			h = held{shared: s.shared, fault: &s.fault}
		}
		s.token = s.bodies.hold(h)
		start.BodyToken = s.token
	}
	if s.shared != nil && s.share != nil {
		token, err := s.share.Send(s.shared)
		if err != nil {
			return nil, fmt.Errorf("%w: shared body channel", ErrUnavailable)
		}
		start.Body = nil
		start.SharedBody = &pb.SharedBody{Token: token, Length: uint64(s.shared.Len())}
	}
	err := s.stream.Send(&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: start}})
	start.Body, start.SharedBody = body, nil
	if err == nil && s.proceedIf != nil {
		s.early = s.proceedIf()
	}
	if err == nil && s.early {
		// a family that refused may have ended the stream already: the
		// send then says io.EOF, and the refusal is read below
		if err = s.stream.Send(&pb.HostToFamily{Msg: &pb.HostToFamily_Proceed{Proceed: &pb.Proceed{}}}); errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
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

// ProceedWithStart, called before Start, sends the family its Proceed
// right behind the Start, before the validation comes back: for a request
// nothing stands between validation and measurement (no payment), one
// round trip to the plugin instead of two. A family that refuses ends the
// stream and never reads it; one that accepts finds it waiting.
func (s *Session) ProceedWithStart() { s.proceedIf = func() bool { return true } }

// ProceedIf, called before Start, has Start run ok once the Start is
// sent, while the family validates in its own process: when ok is true,
// the Proceed goes right behind, as with ProceedWithStart. What stands
// between validation and measurement (the payment's check) then costs no
// round trip of its own. ok runs on the caller's goroutine, at most once
// per Start.
func (s *Session) ProceedIf(ok func() bool) { s.proceedIf = ok }

// Proceed lets the family measure and returns its report.
func (s *Session) Proceed() (*pb.Report, error) {
	if !s.proceeded {
		s.proceeded = true
		s.measuring.Add(1)
	}
	if !s.early {
		if err := s.stream.Send(&pb.HostToFamily{Msg: &pb.HostToFamily_Proceed{Proceed: &pb.Proceed{}}}); err != nil {
			return nil, s.fail(err)
		}
	}
	msg, err := s.stream.Recv()
	if err != nil {
		return nil, s.fail(err)
	}
	r := msg.GetReport()
	if r == nil {
		return nil, fmt.Errorf("%w: expected report", ErrFailed)
	}
	s.served.Store(true)
	return r, nil
}

// Close ends the stream; a family waiting for Proceed sees the end and
// drops what it parsed.
func (s *Session) Close() {
	_ = s.stream.CloseSend()
	s.cancel()
	if s.proceeded {
		s.proceeded = false
		s.measuring.Add(-1)
	}
	if s.token != 0 {
		s.bodies.release(s.token)
	}
	if s.ownsShared {
		s.shared.Close()
	}
}

func (s *Session) fail(err error) error {
	if errors.Is(err, io.EOF) {
		// the server closed the stream: the real status is on Recv
		_, err = s.stream.Recv()
	}
	if f := s.fault.Load(); f != nil {
		// the family failed because its adapter did: the adapter's fault,
		// never a transient one to retry
		return &FaultError{*f}
	}
	return classify(s.ctx, s.conn.Exited, err)
}

// classify maps a transport error to the boundary's errors: a deadline, a
// plugin that went away, or a plugin that failed the request.
func classify(ctx context.Context, exited <-chan struct{}, err error) error {
	// past the deadline is a deadline, whichever end noticed it first (a
	// caller that gives up cancels the call before its own timer fires
	// here)
	if dl, ok := ctx.Deadline(); ctx.Err() == context.DeadlineExceeded || ok && !time.Now().Before(dl) {
		return fmt.Errorf("%w", ErrDeadline)
	}
	if exited != nil {
		select {
		case <-exited:
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

// boundaryKind names a boundary error for a log line: a fixed word,
// never the error's text.
func boundaryKind(err error) string {
	switch {
	case errors.Is(err, ErrDeadline):
		return "deadline"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return "failed"
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

// Pin is the plugin binary's SHA-256, as pinned and checked at every
// exec: what a launch proof of this plugin depends on.
func (p *proc) Pin() string { return p.spec.SHA256 }

// Binary is the plugin binary's file name in the plugin folder.
func (p *proc) Binary() string { return filepath.Base(p.spec.Path) }
