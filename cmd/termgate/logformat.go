package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/term"
)

// newLogger is the main log on stderr: --log-format auto is text on a
// terminal (a person reading) and JSON otherwise (journald, a container
// runtime, a pipe: something storing or shipping it).
func newLogger(o *options) (*slog.Logger, error) {
	return newLoggerTo(os.Stderr, o, term.IsTerminal(int(os.Stderr.Fd())))
}

func newLoggerTo(w io.Writer, o *options, terminal bool) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", o.logLevel)
	}
	format := o.logFormat
	if format == "auto" || format == "" {
		format = "json"
		if terminal {
			format = "text"
		}
	}
	switch format {
	case "text":
		return slog.New(&compactHandler{w: w, mu: &sync.Mutex{}, level: level}), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), nil
	}
	return nil, fmt.Errorf("--log-format %q: use auto, text or json", o.logFormat)
}

// compactHandler writes slog's text format for people at a terminal:
// "15:04:05 INFO  message key=value ...", the time of day (the date and
// zone are the terminal's own; JSON keeps RFC 3339), the level padded so
// messages line up, the message bare. The key=value part is slog's own
// TextHandler's (quoting, groups), run per record on what With and
// WithGroup gave: logs at info are a few lines a minute, so the
// per-record handler costs nothing that matters.
type compactHandler struct {
	w     io.Writer
	mu    *sync.Mutex // one Write per line, lines never interleave
	level slog.Leveler
	ops   []func(slog.Handler) slog.Handler // With and WithGroup, in order
}

func (h *compactHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *compactHandler) Handle(ctx context.Context, r slog.Record) error {
	var buf bytes.Buffer
	buf.WriteString(r.Time.Format("15:04:05"))
	fmt.Fprintf(&buf, " %-5s %s", r.Level.String(), r.Message)
	var attrs bytes.Buffer
	var inner slog.Handler = slog.NewTextHandler(&attrs, &slog.HandlerOptions{
		Level: slog.LevelDebug - 8, // Enabled above decided
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{} // written above
			}
			return a
		},
	})
	for _, op := range h.ops {
		inner = op(inner)
	}
	r.Message = ""
	if err := inner.Handle(ctx, r); err != nil {
		return err
	}
	if b := bytes.TrimSpace(attrs.Bytes()); len(b) > 0 {
		buf.WriteByte(' ')
		buf.Write(b)
	}
	buf.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(buf.Bytes())
	return err
}

func (h *compactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.with(func(in slog.Handler) slog.Handler { return in.WithAttrs(as) })
}

func (h *compactHandler) WithGroup(name string) slog.Handler {
	return h.with(func(in slog.Handler) slog.Handler { return in.WithGroup(name) })
}

func (h *compactHandler) with(op func(slog.Handler) slog.Handler) *compactHandler {
	c := *h
	c.ops = append(h.ops[:len(h.ops):len(h.ops)], op)
	return &c
}
