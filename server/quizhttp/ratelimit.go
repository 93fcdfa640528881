package quizhttp

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The default pace of submissions per user: enough for a student to fix a
// mistyped form a few times over, while a script probing the grader gets
// one try every few seconds.
const (
	DefaultSubmitBurst = 10
	DefaultSubmitEvery = 6 * time.Second
)

// maxTrackedUsers bounds the limiter's memory: past it, users whose bucket
// has refilled (who are as good as new) are forgotten.
const maxTrackedUsers = 10000

// submitLimiter is a token bucket per authenticated user. It lives in the
// process: a class behind several replicas gets each replica's allowance,
// as kube-apiserver's own limits are per server.
type submitLimiter struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	users map[string]*rate.Limiter
}

func newSubmitLimiter(every time.Duration, burst int) *submitLimiter {
	return &submitLimiter{every: rate.Every(every), burst: burst, users: map[string]*rate.Limiter{}}
}

// allow takes a token from user's bucket, or says how long until one is
// there.
func (l *submitLimiter) allow(user string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.users[user]
	if !ok {
		if len(l.users) >= maxTrackedUsers {
			l.forgetFull(now)
		}
		b = rate.NewLimiter(l.every, l.burst)
		l.users[user] = b
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *submitLimiter) forgetFull(now time.Time) {
	for u, b := range l.users {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.users, u)
		}
	}
}

// errTooManySubmissions is kube's 429, with the seconds to wait (rounded
// up) that the error handler sends as Retry-After.
func errTooManySubmissions(wait time.Duration) error {
	secs := int(math.Ceil(wait.Seconds()))
	return apierrors.NewTooManyRequests(fmt.Sprintf("too many quiz submissions: wait %d seconds and submit again", secs), secs)
}
