package server

import (
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/storage"
)

// WriteBytesPerSecond and WriteBurstBytes are classroom mode's budget of
// bytes each student may write to the API: a sustained rate, and what may
// go at once after a quiet while. The quota bounds what a namespace holds,
// not how often it is rewritten: every rewrite of an object is a new
// revision that etcd keeps until the next compaction (five minutes by
// default), and its raft log keeps the entry in memory. Twelve kubectl
// replace loops of one 1 MiB ConfigMap grew etcd by 262 MB and kubelab by
// 1 GB in minutes, and would have reached etcd's 2 GiB space quota
// between two compactions, after which etcd refuses every write.
//
// 64 KiB/s is 19 MiB between two compactions, and a hundred students at
// it stay under the space quota. At once, a student may write as much as
// their namespace's quota holds (16 MiB of stored bytes): a lab's every
// manifest many times over, and many pushes of the watch lab's window.
const (
	WriteBytesPerSecond = 64 << 10
	WriteBurstBytes     = 16 << 20
)

// writeBudgets are the byte budgets of the users who write, by budgetKey.
type writeBudgets struct {
	// rate and burst are the class's budget; each replica keeps its
	// share of it (shares), since a student's requests reach them all.
	rate, burst float64
	shares      func() int
	now         func() time.Time

	mu      sync.Mutex
	buckets map[string]*byteBucket
	// swept is when full buckets were last forgotten.
	swept time.Time
}

// byteBucket holds what a user may still write: tokens grow at the rate
// up to the burst, and a write is paid for once it is done, for only then
// is its size known (a body can come chunked, and a small patch can
// rewrite a large object). A user in debt is refused until it is paid.
type byteBucket struct {
	tokens float64
	at     time.Time
}

// newWriteBudgets keeps the budgets of rate and burst, this replica's
// share of them: shares says how many replicas there are now.
func newWriteBudgets(rate, burst int, shares func() int) *writeBudgets {
	return &writeBudgets{rate: float64(rate), burst: float64(burst), shares: shares, now: time.Now, buckets: map[string]*byteBucket{}}
}

// share is this replica's rate and burst.
func (w *writeBudgets) share() (rate, burst float64) {
	n := float64(max(1, w.shares()))
	return w.rate / n, w.burst / n
}

// budgetKey is whose budget a request's writes come out of, and ok is
// false for those with none: a student's own writes, and those of every
// service account in a namespace, the namespace's (a student's namespace
// is named as they are, and the tokens of its service accounts are theirs
// to mint). Instructors, admins and kubelab's own components have none.
func budgetKey(u pipeline.User) (key string, ok bool) {
	if classroom.IsStudent(u) {
		return u.Name, true
	}
	if ns, _, err := serviceaccount.SplitUsername(u.Name); err == nil {
		return ns, true
	}
	return "", false
}

// refill brings b up to now; the caller holds mu.
func (w *writeBudgets) refill(b *byteBucket, now time.Time) {
	rate, burst := w.share()
	b.tokens = math.Min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
}

// wait is how long key must wait before writing again: 0 when it is not
// in debt.
func (w *writeBudgets) wait(key string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.buckets[key]
	if !ok {
		return 0
	}
	w.refill(b, w.now())
	if b.tokens >= 0 {
		return 0
	}
	rate, _ := w.share()
	return time.Duration(-b.tokens / rate * float64(time.Second))
}

// sweepEvery is how often pay forgets the buckets that have filled up
// again, so that the map holds only recent writers without each write
// walking it.
const sweepEvery = time.Minute

// pay takes n bytes from key's budget, into debt if need be.
func (w *writeBudgets) pay(key string, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	_, burst := w.share()
	b, ok := w.buckets[key]
	if !ok {
		b = &byteBucket{tokens: burst, at: now}
		w.buckets[key] = b
	}
	w.refill(b, now)
	b.tokens -= float64(n)
	if now.Sub(w.swept) < sweepEvery {
		return
	}
	w.swept = now
	for k, other := range w.buckets {
		if other != b {
			if w.refill(other, now); other.tokens >= burst {
				delete(w.buckets, k)
			}
		}
	}
}

// limitWrites is the middleware: after authentication and the in-flight
// limits, around the API's creates, updates and patches. What a write
// costs is the larger of the body it sent and the object it got back,
// which is the object etcd stored (the API's answers are not
// compressed); a dry run costs nothing. A client may ask for another
// answer than the object, though (a Table, or its metadata alone: an
// Accept with as=), and then a one-line patch would pay a few hundred
// bytes for rewriting a megabyte: such a write costs the largest object
// storage writes, for its stored size is not known here. kubectl never
// asks for one on a write. A user in debt gets kube's 429 with the
// seconds to wait in Retry-After, which client-go honours.
func limitWrites(w *writeBudgets) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch:
			default:
				return next(c)
			}
			u, _ := pipeline.AuthenticatedFromContext(r.Context())
			key, ok := budgetKey(u)
			if !ok || !apiRoutes[c.Path()] {
				return next(c)
			}
			if d := w.wait(key); d > 0 {
				secs := int(math.Ceil(d.Seconds()))
				return apierrors.NewTooManyRequests(fmt.Sprintf(
					"too many bytes written: at most %d KiB a second for each student (%s), after %d MiB at once, across kubelab's replicas; wait %d s",
					int(w.rate)>>10, key, int(w.burst)>>20, secs), secs)
			}
			body := &countingBody{ReadCloser: r.Body}
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = body
			}
			err := next(c)
			// A refused write (a conflict, a 403, a 422) stored nothing,
			// and neither does a dry run: they cost nothing. A refusal
			// comes back as an error, written after this middleware, so
			// the status read here would still be Echo's default 200.
			if st := c.Response().Status; err == nil && st >= 200 && st < 300 && len(r.URL.Query()["dryRun"]) == 0 {
				w.pay(key, writeCost(r, body.n, c.Response()))
			}
			return err
		}
	}
}

// writeCost is what a write of r that sent sent bytes and got resp back
// costs: the larger of the two when the answer is the object, and the
// largest object storage writes when it may be another representation.
func writeCost(r *http.Request, sent int64, resp *echo.Response) int64 {
	if answersWithObject(r.Header.Values("Accept"), resp.Header().Get(echo.HeaderContentType)) {
		return max(sent, resp.Size)
	}
	return max(sent, resp.Size, storage.MaxObjectBytes)
}

// answersWithObject says whether an answer of contentType, to a request
// that accepted accept, is the object itself. A Table or the metadata
// alone is asked for with kube's as= parameter, and kubelab's own core
// does not repeat it in its answer's type: so an Accept that names as=
// in any of its choices (read loosely: a server may read one that does
// not parse), or an answer whose type names it or cannot be read, is not
// known to be the object.
func answersWithObject(accept []string, contentType string) bool {
	for _, header := range accept {
		if strings.Contains(strings.ToLower(header), "as=") {
			return false
		}
	}
	_, params, err := mime.ParseMediaType(contentType)
	return err == nil && params["as"] == ""
}

// countingBody counts the bytes read from a request's body.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
