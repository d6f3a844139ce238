package devserver

import (
	"fmt"
	"sync/atomic"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// quietLogger drops the server's logs while it is starting and once it is
// stopping: its services report each other as not yet (or no longer)
// available then, which is expected and only buries the lines that matter.
// A start that never becomes ready is reported by Start itself.
type quietLogger struct {
	inner    tlog.Logger
	stopping *atomic.Bool
}

func (l *quietLogger) Debug(msg string, tags ...tag.Tag) {
	if !l.stopping.Load() {
		l.inner.Debug(msg, tags...)
	}
}

func (l *quietLogger) Info(msg string, tags ...tag.Tag) {
	if !l.stopping.Load() {
		l.inner.Info(msg, tags...)
	}
}

func (l *quietLogger) Warn(msg string, tags ...tag.Tag) {
	if !l.stopping.Load() {
		l.inner.Warn(msg, tags...)
	}
}

func (l *quietLogger) Error(msg string, tags ...tag.Tag) {
	if !l.stopping.Load() {
		l.inner.Error(msg, tags...)
	}
}

func (l *quietLogger) DPanic(msg string, tags ...tag.Tag) { l.inner.DPanic(msg, tags...) }
func (l *quietLogger) Panic(msg string, tags ...tag.Tag)  { l.inner.Panic(msg, tags...) }

// Fatal panics instead of exiting: the server runs inside paydispatch, and
// a fatal while it starts (a port taken meanwhile, say) must become an
// error Start can report or retry, not the end of the process.
func (l *quietLogger) Fatal(msg string, tags ...tag.Tag) {
	l.inner.Error(msg, tags...)
	panic(fatalError{msg: msg, tags: tags})
}

// fatalError is what the server reported as fatal.
type fatalError struct {
	msg  string
	tags []tag.Tag
}

func (e fatalError) Error() string {
	s := "temporal: " + e.msg
	for _, t := range e.tags {
		if t.Key() == "error" {
			s += ": " + fmt.Sprint(t.Value())
		}
	}
	return s
}

// With keeps the prepended tags and the shared stopping flag.
func (l *quietLogger) With(tags ...tag.Tag) tlog.Logger {
	return &quietLogger{inner: tlog.With(l.inner, tags...), stopping: l.stopping}
}
