package labhttp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/pipeline"
)

// tracesPerCheck is how many of a user's recent traces a check reads.
const tracesPerCheck = 200

// checkQueue bounds the users waiting for a check; past it a check is
// dropped, and the next request of that user (or the page's Check
// button) schedules it again.
const checkQueue = 1024

// TraceSource is the trace bus as the labs read it.
type TraceSource interface {
	Recent(user string, n int) []pipeline.Trace
	Subscribe(ctx context.Context, filter func(pipeline.Trace) bool, buffer int) <-chan pipeline.Trace
}

// service runs the checks: when one of a student's requests is traced or
// one of their watches sends something, their current steps are checked
// against what happened, and passed steps are stored.
type service struct {
	labs    []*labs.Lab
	store   labs.Store
	world   *world
	traces  TraceSource
	watches *watches
	log     *slog.Logger
	now     func() time.Time
	changed func(p *labs.Progress)

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex

	// active is who has started a lab: only their requests are checked.
	activeMu sync.RWMutex
	active   map[string]bool

	queue   chan string
	pendMu  sync.Mutex
	pending map[string]bool
}

func (s *service) lock(user string) func() {
	s.locksMu.Lock()
	m, ok := s.locks[user]
	if !ok {
		m = &sync.Mutex{}
		s.locks[user] = m
	}
	s.locksMu.Unlock()
	m.Lock()
	return m.Unlock
}

func (s *service) isActive(user string) bool {
	s.activeMu.RLock()
	defer s.activeMu.RUnlock()
	return s.active[user]
}

func (s *service) setActive(user string) {
	s.activeMu.Lock()
	s.active[user] = true
	s.activeMu.Unlock()
}

// loadActive learns, at start, who had started labs before a restart.
func (s *service) loadActive(ctx context.Context) error {
	all, err := s.store.List(ctx)
	if err != nil {
		return err
	}
	for _, p := range all {
		s.setActive(p.User)
	}
	return nil
}

// schedule queues a check of user's steps, once however often it is asked.
func (s *service) schedule(user string) {
	if !s.isActive(user) {
		return
	}
	s.pendMu.Lock()
	if s.pending[user] {
		s.pendMu.Unlock()
		return
	}
	s.pending[user] = true
	s.pendMu.Unlock()
	select {
	case s.queue <- user:
	default:
		s.pendMu.Lock()
		delete(s.pending, user)
		s.pendMu.Unlock()
	}
}

// run checks queued users and follows the trace bus until ctx ends.
func (s *service) run(ctx context.Context) {
	traces := s.traces.Subscribe(ctx, func(t pipeline.Trace) bool { return s.isActive(t.User) }, 1024)
	go func() {
		for t := range traces {
			s.schedule(t.User)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case user := <-s.queue:
			s.pendMu.Lock()
			delete(s.pending, user)
			s.pendMu.Unlock()
			if _, err := s.check(ctx, user); err != nil && ctx.Err() == nil {
				s.log.Warn("checking lab steps", "user", user, "error", err)
			}
		}
	}
}

// conflictRetries is how often a write that met another replica's write
// to the same student's progress is redone on fresh progress.
const conflictRetries = 5

// retry runs f again while it meets another writer's change.
func retry[T any](f func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := f()
		if !errors.Is(err, labs.ErrConflict) || i == conflictRetries {
			return v, err
		}
	}
}

// check runs user's current checks now and stores what passed.
func (s *service) check(ctx context.Context, user string) (*labs.Progress, error) {
	defer s.lock(user)()
	return retry(func() (*labs.Progress, error) { return s.checkOnce(ctx, user) })
}

func (s *service) checkOnce(ctx context.Context, user string) (*labs.Progress, error) {
	p, err := s.store.Get(ctx, user)
	if err != nil {
		return nil, err
	}
	rev, err := s.world.revision(ctx)
	if err != nil {
		return nil, err
	}
	changed, cerr := labs.Advance(ctx, s.labs, p, s.env(p), s.now(), rev)
	if changed {
		if err := s.store.Put(ctx, p); err != nil {
			return nil, err
		}
		s.changed(p)
	}
	return p, cerr
}

// env is what happened for p's student: their recent traces and watches.
func (s *service) env(p *labs.Progress) labs.Env {
	return labs.Env{User: p.User, Namespace: p.Namespace, Traces: s.traces.Recent(p.User, tracesPerCheck),
		Watches: s.watches.snapshot(p.User), World: s.world}
}

// progress reads user's progress; a student with none gets an empty one.
func (s *service) progress(ctx context.Context, u pipeline.User) (*labs.Progress, error) {
	p, err := s.store.Get(ctx, u.Name)
	if errors.Is(err, labs.ErrNotFound) {
		return labs.NewProgress(u.Name, classOf(u), namespaceOf(u)), nil
	}
	return p, err
}

// start begins lab l for u (or makes it current again) and checks it.
func (s *service) start(ctx context.Context, u pipeline.User, l *labs.Lab) (*labs.Progress, error) {
	unlock := s.lock(u.Name)
	_, err := retry(func() (*labs.Progress, error) {
		p, err := s.progress(ctx, u)
		if err != nil {
			return nil, err
		}
		rev, err := s.world.revision(ctx)
		if err != nil {
			return nil, err
		}
		if p.Start(l, s.now(), rev) {
			if err := s.store.Put(ctx, p); err != nil {
				return nil, err
			}
			s.setActive(u.Name)
			s.changed(p)
		}
		return p, nil
	})
	unlock()
	if err != nil {
		return nil, err
	}
	return s.check(ctx, u.Name)
}

// answer grades an answer to a question step.
func (s *service) answer(ctx context.Context, u pipeline.User, l *labs.Lab, step, answer string) (bool, *labs.Progress, error) {
	defer s.lock(u.Name)()
	var right bool
	p, err := retry(func() (*labs.Progress, error) {
		p, err := s.store.Get(ctx, u.Name)
		if err != nil {
			return nil, err
		}
		rev, err := s.world.revision(ctx)
		if err != nil {
			return nil, err
		}
		if right, err = labs.Answer(ctx, l, p, step, answer, s.env(p), s.now(), rev); err != nil {
			return p, err
		}
		// A wrong answer is stored too: its try counts.
		if err := s.store.Put(ctx, p); err != nil {
			return nil, err
		}
		s.changed(p)
		return p, nil
	})
	return right, p, err
}

// restart begins lab l again for u: its steps start over from now.
func (s *service) restart(ctx context.Context, u pipeline.User, l *labs.Lab) (*labs.Progress, error) {
	unlock := s.lock(u.Name)
	_, err := retry(func() (*labs.Progress, error) {
		p, err := s.store.Get(ctx, u.Name)
		if err != nil {
			return nil, err
		}
		rev, err := s.world.revision(ctx)
		if err != nil {
			return nil, err
		}
		if err := p.Restart(l, s.now(), rev); err != nil {
			return nil, err
		}
		if err := s.store.Put(ctx, p); err != nil {
			return nil, err
		}
		s.changed(p)
		return p, nil
	})
	unlock()
	if err != nil {
		return nil, err
	}
	return s.check(ctx, u.Name)
}
