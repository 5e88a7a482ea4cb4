package cmdutil

import (
	"io"
	"log/slog"
	"time"
)

// Logger writes a launcher's warnings to w (a host where libvirt is slow
// is never a silent one) and, when verbose, each of its steps, as slog
// text lines whose time is "t=", the time since Logger was called.
func Logger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	began := time.Now()
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.String("t", time.Since(began).Round(time.Millisecond).String())
			}
			return a
		},
	}))
}
