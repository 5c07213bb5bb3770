package pluginhost

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// custodyLogger sits between go-plugin and the host log for everything a
// plugin writes on stderr. go-plugin turns each stderr line into one logger
// call: hclog JSON lines become a message with key/value args, anything else
// a bare message. A bare line can be anything a plugin printed, including a
// panic trace whose argument words or panic value came from a submission, so
// bare lines never pass: a panic becomes "plugin panicked" plus the function
// names of its frames, and any other bare line becomes a byte count.
// Structured entries keep their message and their numeric and boolean
// values; string values are replaced by their length.
type custodyLogger struct {
	hclog.Logger
	state *panicState
}

type panicState struct {
	mu      sync.Mutex
	inPanic bool
}

func newCustodyLogger(l hclog.Logger) hclog.Logger {
	return &custodyLogger{Logger: l, state: &panicState{}}
}

// clientLogger is what go-plugin gets: its own lifecycle messages (paths,
// pids, exit statuses) pass, and every logger it derives with Named — the
// per-plugin stderr logger among them — reduces. go-plugin names the
// binary under "plugin", the key the host's logger already holds for the
// plugin's name (With): in a JSON line the later key would win and the
// name be lost, so the binary goes under "binary".
type clientLogger struct{ hclog.Logger }

func (c clientLogger) Log(level hclog.Level, msg string, args ...any) {
	c.Logger.Log(level, msg, binaryKey(args)...)
}
func (c clientLogger) Trace(msg string, args ...any) { c.Logger.Trace(msg, binaryKey(args)...) }
func (c clientLogger) Debug(msg string, args ...any) { c.Logger.Debug(msg, binaryKey(args)...) }
func (c clientLogger) Info(msg string, args ...any)  { c.Logger.Info(msg, binaryKey(args)...) }
func (c clientLogger) Warn(msg string, args ...any)  { c.Logger.Warn(msg, binaryKey(args)...) }
func (c clientLogger) Error(msg string, args ...any) { c.Logger.Error(msg, binaryKey(args)...) }

// binaryKey is args with go-plugin's "plugin" key renamed "binary".
func binaryKey(args []any) []any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == "plugin" {
			out := slices.Clone(args)
			for j := i; j+1 < len(out); j += 2 {
				if k, ok := out[j].(string); ok && k == "plugin" {
					out[j] = "binary"
				}
			}
			return out
		}
	}
	return args
}

func (c clientLogger) Named(name string) hclog.Logger {
	return newCustodyLogger(c.Logger.Named(name))
}

// frame matches a goroutine trace's function line: "pkg/path.Func(0x1, ...)"
// and captures the function name without its arguments.
var frame = regexp.MustCompile(`^((?:[\w.\-]+/)*[\w.\-]+\.[\w.\-*()\[\]]+?)\(.*\)$`)

func (c *custodyLogger) reduce(level hclog.Level, msg string, args []any) {
	if len(args) > 0 {
		c.Logger.Log(level, msg, scrubArgs(args)...)
		return
	}
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	switch {
	case strings.HasPrefix(msg, "panic: ") || strings.HasPrefix(msg, "fatal error: "):
		c.state.inPanic = true
		c.Logger.Error("plugin panicked")
	case c.state.inPanic:
		if m := frame.FindStringSubmatch(msg); m != nil {
			c.Logger.Error("plugin panic frame", "function", m[1])
		}
		// goroutine headers, file:line lines and everything else: dropped
	default:
		c.Logger.Log(level, "plugin wrote unstructured stderr", "bytes", len(msg))
	}
}

// funcName is a Go function's qualified name, as runtime.Frame gives it.
var funcName = regexp.MustCompile(`^(?:[\w.\-]+/)*[\w.\-]+\.[\w.\-*()\[\]]+$`)

func scrubArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if i%2 == 0 { // keys are the plugin's own identifiers
			out[i] = a
			continue
		}
		switch v := a.(type) {
		case string:
			if args[i-1] == "panic_function" && funcName.MatchString(v) {
				// a recovered panic's site, as a bare trace's frames pass:
				// a Go function's name, never a value
				out[i] = v
				continue
			}
			out[i] = hclog.Fmt("[string, %d bytes]", len(v))
		case float64, float32, int, int64, int32, uint, uint64, uint32, bool, nil:
			out[i] = v
		default:
			out[i] = "[value withheld]"
		}
	}
	return out
}

func (c *custodyLogger) Log(level hclog.Level, msg string, args ...any) { c.reduce(level, msg, args) }
func (c *custodyLogger) Trace(msg string, args ...any)                  { c.reduce(hclog.Trace, msg, args) }
func (c *custodyLogger) Debug(msg string, args ...any)                  { c.reduce(hclog.Debug, msg, args) }
func (c *custodyLogger) Info(msg string, args ...any)                   { c.reduce(hclog.Info, msg, args) }
func (c *custodyLogger) Warn(msg string, args ...any)                   { c.reduce(hclog.Warn, msg, args) }
func (c *custodyLogger) Error(msg string, args ...any)                  { c.reduce(hclog.Error, msg, args) }

// Named, ResetNamed and With keep the reduction on derived loggers: go-plugin
// derives the per-plugin stderr logger with Named.
func (c *custodyLogger) Named(name string) hclog.Logger {
	return &custodyLogger{Logger: c.Logger.Named(name), state: c.state}
}

func (c *custodyLogger) ResetNamed(name string) hclog.Logger {
	return &custodyLogger{Logger: c.Logger.ResetNamed(name), state: c.state}
}

func (c *custodyLogger) With(args ...any) hclog.Logger {
	return &custodyLogger{Logger: c.Logger.With(scrubArgs(args)...), state: c.state}
}
