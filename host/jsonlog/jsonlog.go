// Package jsonlog makes the host's JSON log readable by a machine that
// does not know Go: hclog writes a time.Duration as its integer
// nanoseconds ("grace":60000000000), which a log pipeline reads as sixty
// billion of something. Wrapped, every duration is a number of seconds.
package jsonlog

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// Seconds wraps l so that every time.Duration among a line's key-value
// pairs is written as its seconds (a float64); loggers derived from it
// (With, Named, ResetNamed) do the same.
func Seconds(l hclog.Logger) hclog.Logger { return seconds{l} }

type seconds struct{ hclog.Logger }

func convert(args []any) []any {
	var out []any
	for i, a := range args {
		d, ok := a.(time.Duration)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any{}, args...)
		}
		out[i] = d.Seconds()
	}
	if out == nil {
		return args
	}
	return out
}

func (s seconds) Log(level hclog.Level, msg string, args ...any) {
	s.Logger.Log(level, msg, convert(args)...)
}
func (s seconds) Trace(msg string, args ...any) { s.Logger.Trace(msg, convert(args)...) }
func (s seconds) Debug(msg string, args ...any) { s.Logger.Debug(msg, convert(args)...) }
func (s seconds) Info(msg string, args ...any)  { s.Logger.Info(msg, convert(args)...) }
func (s seconds) Warn(msg string, args ...any)  { s.Logger.Warn(msg, convert(args)...) }
func (s seconds) Error(msg string, args ...any) { s.Logger.Error(msg, convert(args)...) }

// With keeps the wrapping for the derived logger's own arguments too.
func (s seconds) With(args ...any) hclog.Logger { return seconds{s.Logger.With(convert(args)...)} }

// Named keeps the wrapping.
func (s seconds) Named(name string) hclog.Logger { return seconds{s.Logger.Named(name)} }

// ResetNamed keeps the wrapping.
func (s seconds) ResetNamed(name string) hclog.Logger { return seconds{s.Logger.ResetNamed(name)} }
