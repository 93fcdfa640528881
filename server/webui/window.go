package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// horizons are the two places where history ends, as the timeline draws
// them: the pods watch cache's window, below which a watch gets
// "too old resource version", and etcd's compacted revision, below which
// what reads etcd (an exact list, a continue token, a watch with the
// cache off) gets etcd's own 410s.
type horizons struct {
	Head int64 `json:"head"`
	// WindowStart is the oldest resourceVersion a watch can resume from.
	WindowStart int64 `json:"windowStart"`
	// WindowEvents and WindowCapacity: how full the window is.
	WindowEvents   int `json:"windowEvents"`
	WindowCapacity int `json:"windowCapacity"`
	// OldestAgeMs is how old the window's oldest event is; FreshMs how old
	// it must be before a full window drops it rather than grows.
	OldestAgeMs int64 `json:"oldestAgeMs"`
	FreshMs     int64 `json:"freshMs"`
	// Compacted is etcd's compacted revision, 0 while nothing that
	// matters is compacted.
	Compacted int64 `json:"compacted"`
}

// clockInterval is how often the timelines hear etcd's clock.
const clockInterval = 2 * time.Second

// horizonsNow reads both horizons: the window from the watch cache, and
// etcd's compacted revision from etcd, once a clock tick at most.
func (u *UI) horizonsNow(ctx context.Context) horizons {
	w := u.PodsCache.Window()
	h := horizons{Head: w.Head, WindowStart: w.Start, WindowEvents: w.Events, WindowCapacity: w.Capacity,
		FreshMs: w.Fresh.Milliseconds()}
	if !w.OldestRecorded.IsZero() {
		h.OldestAgeMs = time.Since(w.OldestRecorded).Milliseconds()
	}
	h.Compacted = u.compacted.read(ctx, u.Compactor)
	return h
}

// compactedRevision is etcd's compacted revision as last read: every
// lane's list and every clock tick draws it, and one read of etcd a tick
// serves them all.
type compactedRevision struct {
	mu  sync.Mutex
	at  time.Time
	rev int64
}

func (c *compactedRevision) read(ctx context.Context, from Compactor) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < clockInterval {
		return c.rev
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if rev, err := from.Compacted(ctx); err == nil {
		c.rev, c.at = rev, time.Now()
	}
	return c.rev
}

// set is a compaction made here: the next read need not ask etcd.
func (c *compactedRevision) set(rev int64) {
	c.mu.Lock()
	c.rev, c.at = rev, time.Now()
	c.mu.Unlock()
}

// clockMsg tells the timelines where etcd's clock and both horizons are.
type clockMsg struct {
	T string `json:"t"`
	horizons
}

// windowPushes names "push the window" in its Status errors.
var windowPushes = schema.GroupResource{Group: "kubelab.io", Resource: "windowpushes"}

// maxWindowPush bounds the changes one push makes: a window grown by a
// busy class would take more than a student should send at once.
const maxWindowPush = 1000

// windowPusher lets each user run one push at a time.
type windowPusher struct {
	mu     sync.Mutex
	active map[string]bool
}

func (p *windowPusher) enter(user string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active[user] {
		return false
	}
	if p.active == nil {
		p.active = map[string]bool{}
	}
	p.active[user] = true
	return true
}

func (p *windowPusher) leave(user string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, user)
}

// pushWindow makes real changes to the reader's pod ssa-demo, each a
// label merge patch through the registry as the reader (traced, authorized, admitted
// like kubectl's), until the pods watch cache's window has moved past the
// resourceVersion a paused watcher stopped at: then that watcher's resume
// gets kube's "too old resource version". It refuses, saying why, while
// the window cannot move: a full window grows instead of dropping an
// event younger than 75 s, which is what lets a watcher that missed a
// change less than 75 s ago always resume.
func (u *UI) pushWindow(c echo.Context) error {
	var req struct {
		Past int64 `json:"past"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 1024)).Decode(&req); err != nil || req.Past <= 0 {
		return apierrors.NewBadRequest(`the body must be {"past": <the resourceVersion watcher B stopped at>}`)
	}
	name := user(c).Name
	if !u.pusher.enter(name) {
		return apierrors.NewConflict(windowPushes, name, fmt.Errorf("a push of yours is still running"))
	}
	defer u.pusher.leave(name)

	cache := u.PodsCache
	wait, made := cache.DropWait(req.Past, time.Now())
	switch {
	case !made:
		return tooEarly(0, fmt.Sprintf("no change after resourceVersion %d has been made yet: change the pod first, so that watcher B misses it; the window drops that change only once it is %s old",
			req.Past, cache.Window().Fresh))
	case wait > 0:
		return tooEarly(wait, fmt.Sprintf("the first change watcher B missed is younger than %s: the watch cache grows its window rather than drop it, so B could still resume; wait %s",
			cache.Window().Fresh, wait.Round(time.Second)))
	}
	if w := cache.Window(); w.Capacity-w.Events > maxWindowPush {
		return tooEarly(0, fmt.Sprintf("the window has room for %d more events (a busy class grew it to %d): that is more changes than one push makes; wait until it shrinks",
			w.Capacity-w.Events, w.Capacity))
	}

	from := callerOf(c.Request())
	ctx := from.in(c.Request().Context())
	key := storage.Key{Namespace: namespace(c), Name: "ssa-demo"}
	round := strconv.FormatInt(time.Now().UnixMilli(), 36)
	changes := 0
	for ; changes < maxWindowPush && cache.Window().Start <= req.Past; changes++ {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
			"demo-round": round + "-" + strconv.Itoa(changes)}}})
		pod, err := u.Pods.Patch(ctx, key, types.MergePatchType, body, registry.PatchOptions{FieldManager: "kubelab-web"})
		if err != nil {
			return err
		}
		m, err := meta.Accessor(pod)
		if err != nil {
			return err
		}
		last, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
		// The cache learns of the change from etcd's watch, a moment
		// later: wait for it, so the window is read as of this change (a
		// cache that lags for seconds only makes the push go on longer).
		_ = cache.WaitUntilFresh(ctx, last)
	}
	w := cache.Window()
	return c.JSON(http.StatusOK, map[string]any{"changes": changes, "windowStart": w.Start, "passed": w.Start > req.Past})
}

// tooEarly is a 409 saying why the window cannot move yet, with how long
// to wait when that is known.
func tooEarly(wait time.Duration, message string) error {
	st := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusConflict,
		Reason: metav1.StatusReasonConflict, Message: message,
		Details: &metav1.StatusDetails{Group: windowPushes.Group, Kind: windowPushes.Resource}}}
	if wait > 0 {
		st.ErrStatus.Details.RetryAfterSeconds = int32((wait + time.Second - 1) / time.Second)
	}
	return st
}
