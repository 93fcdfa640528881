package server

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogger hands the embedded etcd's zap logs to slog: errors always, and
// everything at debug level when the server logs debug. While stopping, etcd
// reports its own listeners closing as errors; those are dropped.
func etcdLogger(log *slog.Logger, stopping *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log, stopping: stopping})
}

type slogCore struct {
	log      *slog.Logger
	stopping *atomic.Bool
	fields   []zapcore.Field
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= zapcore.ErrorLevel || c.log.Enabled(context.Background(), slog.LevelDebug)
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, stopping: c.stopping, fields: append(c.fields[:len(c.fields):len(c.fields)], fields...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if c.stopping.Load() && e.Message == "setting up serving from embedded etcd failed." {
		return nil
	}
	level := slog.LevelDebug
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(c.fields[:len(c.fields):len(c.fields)], fields...) {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	attrs = append(attrs, slog.String("component", "etcd"))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	c.log.LogAttrs(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
