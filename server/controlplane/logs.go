package controlplane

import (
	"context"
	"log/slog"
)

// kubeLogger is kube-apiserver's logger: kubelab's, one level quieter
// unless kubelab logs at debug. kube reports each step of its start at
// info, which would bury kubelab's own lines.
func kubeLogger(l *slog.Logger) *slog.Logger {
	l = l.With("component", "kube-apiserver")
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(atLeast{Handler: l.Handler(), min: slog.LevelWarn})
}

// atLeast drops records below min.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{Handler: h.Handler.WithGroup(name), min: h.min}
}
