// Package etcdspace keeps a class's etcd writable. When a member's
// database reaches its space quota, etcd raises the NOSPACE alarm and
// refuses every write, everyone's, until the alarm is disarmed: by hand,
// etcd's documentation says, after compacting and defragmenting. A Guard
// does that itself: it compacts the history, defragments each member
// that raised the alarm, and disarms it once the member has room again.
// When what fills the quota is live data rather than history, compaction
// frees nothing; the alarm then stays, and the Guard says so until
// someone deletes enough and its next look finds room.
//
// It works through etcd's client API only, so it holds for the embedded
// member and for an external cluster alike, whichever API core runs.
package etcdspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultInterval is how often a Guard looks at etcd's alarms: a class
// that fills etcd waits at most this long, plus the compaction and
// defragmentation, before it can write again.
const DefaultInterval = 5 * time.Second

// freeFraction is how much of the quota must be free after
// defragmentation for the alarm to be disarmed: with less, the next few
// writes would raise it again at once.
const freeFraction = 5

// State is what a Guard last found.
type State struct {
	// Full is true while a member's NOSPACE alarm is raised: etcd refuses
	// every write.
	Full bool `json:"full"`
	// Since is when the Guard first saw the alarm raised.
	Since *time.Time `json:"since,omitempty"`
	// LiveDataFills is true when compaction and defragmentation left less
	// than a fifth of the quota free: what is stored now fills it, and
	// only deleting some of it gives room back.
	LiveDataFills bool `json:"liveDataFills,omitempty"`
	// InUse and Quota are, in bytes, what the fullest alarmed member's
	// database used after the Guard's last defragmentation, and its quota.
	InUse int64 `json:"inUseBytes,omitempty"`
	Quota int64 `json:"quotaBytes,omitempty"`
	// Recoveries counts the alarms this Guard disarmed.
	Recoveries int `json:"recoveries"`
	// LastRecovery is how long the last alarm this Guard disarmed lasted,
	// from when it first saw it.
	LastRecovery time.Duration `json:"lastRecoveryNanos,omitempty"`
}

// Guard watches etcd's alarms and recovers from NOSPACE.
type Guard struct {
	client *clientv3.Client
	log    *slog.Logger
	now    func() time.Time

	mu        sync.Mutex
	state     State
	listeners []func()
	// filledAt is the revision at which live data was last found to fill
	// the quota (0: not so). Until the revision moves (a delete), another
	// compaction and defragmentation would free nothing, and a defrag
	// holds every request to the member meanwhile: the instructor's
	// deletes timed out behind the guard's defrags, one every look.
	filledAt int64
	// look has Run look again now rather than at its next tick.
	look chan struct{}
}

// New returns a Guard over client, which must be allowed etcd's
// maintenance calls (an admin's).
func New(client *clientv3.Client, log *slog.Logger) *Guard {
	return &Guard{client: client, log: log, now: time.Now, look: make(chan struct{}, 1)}
}

// OnChange has f called, without the Guard's lock, whenever the alarm is
// found raised or gone, or live data is found to fill the quota or not:
// a page that shows the state is redrawn then, not at its next refresh.
func (g *Guard) OnChange(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listeners = append(g.listeners, f)
}

// update changes the state with f and tells the listeners if what they
// show changed.
func (g *Guard) update(f func(s *State)) {
	g.mu.Lock()
	before := g.state
	f(&g.state)
	changed := before.Full != g.state.Full || before.LiveDataFills != g.state.LiveDataFills
	listeners := g.listeners
	g.mu.Unlock()
	if changed {
		for _, l := range listeners {
			l()
		}
	}
}

// State is what the Guard found at its last look.
func (g *Guard) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state
	if s.Since != nil {
		since := *s.Since
		s.Since = &since
	}
	return s
}

// Run looks at etcd's alarms every interval until ctx is done.
func (g *Guard) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := g.Check(ctx); err != nil && ctx.Err() == nil {
			g.log.Warn("etcd's space: the check failed; it is tried again", "error", err, "in", interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-g.look:
		}
	}
}

// Refused tells the Guard that etcd refused a write for want of space, so
// that Run looks now: the recovery then starts at the first refusal, not
// up to an interval later. A look already asked for is not asked twice.
func (g *Guard) Refused() {
	select {
	case g.look <- struct{}{}:
	default:
	}
}

// Check looks at etcd's alarms once and, if a member is out of space,
// compacts, defragments it and disarms its alarm when it has room again.
func (g *Guard) Check(ctx context.Context) error {
	alarms, err := g.client.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("listing etcd's alarms: %w", err)
	}
	var full []*pb.AlarmMember
	for _, a := range alarms.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			full = append(full, a)
		}
	}
	if len(full) == 0 {
		g.cleared()
		return nil
	}
	since := g.raised()
	// Compaction is allowed while the alarm is raised (deletes and
	// maintenance are; puts are not). It is done here rather than through
	// the API core's compactor: that one records its progress in a key,
	// which etcd would now refuse to write.
	now, err := g.client.Get(ctx, "kubelab-etcdspace", clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("reading etcd's revision: %w", err)
	}
	rev := now.Header.Revision
	g.mu.Lock()
	unchanged := g.filledAt == rev
	g.mu.Unlock()
	if unchanged {
		return nil
	}
	if _, err := g.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("compacting etcd at revision %d: %w", rev, err)
	}
	endpoints, err := g.endpoints(ctx)
	if err != nil {
		return err
	}
	var errs []error
	worst := State{}
	disarmed := 0
	for _, a := range full {
		endpoint, ok := endpoints[a.MemberID]
		if !ok {
			errs = append(errs, fmt.Errorf("member %x raised NOSPACE but is not in the member list", a.MemberID))
			continue
		}
		if _, err := g.client.Defragment(ctx, endpoint); err != nil {
			errs = append(errs, fmt.Errorf("defragmenting member %x: %w", a.MemberID, err))
			continue
		}
		status, err := g.client.Status(ctx, endpoint)
		if err != nil {
			errs = append(errs, fmt.Errorf("member %x's status: %w", a.MemberID, err))
			continue
		}
		if status.DbSizeInUse > worst.InUse {
			worst.InUse, worst.Quota = status.DbSizeInUse, status.DbSizeQuota
		}
		if status.DbSizeQuota > 0 && status.DbSizeInUse > status.DbSizeQuota-status.DbSizeQuota/freeFraction {
			worst.LiveDataFills = true
			continue
		}
		if _, err := g.client.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
			errs = append(errs, fmt.Errorf("disarming member %x's NOSPACE: %w", a.MemberID, err))
			continue
		}
		disarmed++
		g.log.Info("etcd's space: a member was out of space; its history was compacted, it was defragmented and its alarm disarmed",
			"member", fmt.Sprintf("%x", a.MemberID), "revision", rev, "inUseBytes", status.DbSizeInUse, "quotaBytes", status.DbSizeQuota,
			"after", g.now().Sub(since).Round(time.Millisecond))
	}
	g.update(func(s *State) {
		g.filledAt = 0
		if worst.LiveDataFills {
			g.filledAt = rev
		}
		s.InUse, s.Quota, s.LiveDataFills = worst.InUse, worst.Quota, worst.LiveDataFills
		if disarmed == len(full) {
			s.Full, s.Since, s.LastRecovery = false, nil, g.now().Sub(since)
			s.Recoveries++
		}
	})
	if worst.LiveDataFills {
		g.log.Error("etcd's space: live data fills the space quota; every write is refused until some is deleted",
			"inUseBytes", worst.InUse, "quotaBytes", worst.Quota)
	}
	return errors.Join(errs...)
}

// raised records that a NOSPACE alarm is raised and returns since when.
func (g *Guard) raised() (since time.Time) {
	g.update(func(s *State) {
		if !s.Full {
			now := g.now()
			s.Full, s.Since = true, &now
			g.log.Warn("etcd is out of space: it refuses every write; compacting and defragmenting it")
		}
		since = *s.Since
	})
	return since
}

// cleared records that no NOSPACE alarm is raised: another replica's
// Guard, or an operator, disarmed the one this Guard saw.
func (g *Guard) cleared() {
	g.mu.Lock()
	g.filledAt = 0
	g.mu.Unlock()
	g.update(func(s *State) { s.Full, s.Since, s.LiveDataFills = false, nil, false })
}

// endpoints maps each member's ID to an endpoint of its own. A member
// with no client URL is the embedded one of an in-process client, whose
// maintenance calls reach it whatever endpoint they name.
func (g *Guard) endpoints(ctx context.Context) (map[uint64]string, error) {
	members, err := g.client.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing etcd's members: %w", err)
	}
	out := map[uint64]string{}
	for _, m := range members.Members {
		out[m.ID] = ""
		if len(m.ClientURLs) > 0 {
			out[m.ID] = m.ClientURLs[0]
		}
	}
	return out, nil
}
