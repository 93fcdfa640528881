// Package quizhttp serves the lesson's quizzes over HTTP: the quiz pages
// at /quiz (templ views, English and Thai), the same quizzes as JSON for
// API clients at /kubelab/v1/quizzes, and the grader endpoint at
// /kubelab/v1/grader for instructors, graders and LMS bridges.
//
// Identity always comes from the front door (pipeline.FromContext), never
// from a request body. Attempts are issued by the server, to one user for
// one quiz, and submitted once, within the instructor's limit. Answers and
// explanations leave the server only in a graded attempt's result, for
// the questions answered, as the reveal policy allows.
package quizhttp

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/quiz/etcdstore"
	"github.com/kubelab/kubelab/web/i18n"
)

// ClassGroupPrefix marks the group that names a student's class (see
// classroom.ClassGroupPrefix).
const ClassGroupPrefix = classroom.ClassGroupPrefix

// MaxBodyBytes bounds a submission: the longest honest one is a few KiB.
const MaxBodyBytes = 64 << 10

// Layout wraps a page's body in the site's layout. lang is "en" or "th".
type Layout func(title string, lang i18n.Lang, body templ.Component) templ.Component

// Config is what the quiz handlers need.
type Config struct {
	// Client is the etcd client attempts are stored with.
	Client *clientv3.Client
	// RequireSignIn refuses anonymous users (classroom mode, where
	// everyone takes quizzes as themselves); off, the anonymous local user
	// takes them as system:anonymous.
	RequireSignIn bool
	// Bank is the quizzes offered; nil is the lesson's.
	Bank *quiz.Bank
	// Store overrides where attempts are kept; nil keeps them in etcd
	// through Client.
	Store quiz.Store
	// Layout is the site's page layout; nil is a plain one of our own.
	Layout Layout
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Policy is how many attempts each student may submit at each quiz
	// (0: no limit) and when answers are revealed; an empty Reveal is
	// quiz.RevealAfterLastAttempt.
	Policy quiz.Policy
	// SubmitBurst and SubmitEvery pace each user's submissions (a token
	// bucket); zero values are DefaultSubmitBurst and DefaultSubmitEvery.
	SubmitBurst int
	SubmitEvery time.Duration
	// DisplayNames are the names students typed, by user name, for the
	// grader's results; nil outside a class.
	DisplayNames func(ctx context.Context) (map[string]string, error)
	// ClassName is the class students join here (--class-name): the
	// grader's ?class= names it, or a class that has attempts, or is a
	// typo answered with 404.
	ClassName string
	// Students are those who joined the class, and Progress everyone's
	// lab progress, for the grader's roster; nil where there is none.
	Students func(ctx context.Context) ([]classroom.Student, error)
	Progress func(ctx context.Context) ([]*labs.Progress, error)
}

type handlers struct {
	signIn bool
	bank   *quiz.Bank
	store  quiz.Store
	layout Layout
	log    *slog.Logger
	now    func() time.Time
	policy quiz.Policy
	pace   *submitLimiter
	// displayNames: see Config.DisplayNames.
	displayNames func(ctx context.Context) (map[string]string, error)
	className    string
	students     func(ctx context.Context) ([]classroom.Student, error)
	progress     func(ctx context.Context) ([]*labs.Progress, error)
}

// Install routes the quiz pages, the quiz API and the grader endpoint on
// e. The front door has authenticated every request; these handlers decide
// what each user may do.
func Install(e *echo.Echo, cfg Config) error {
	h := &handlers{signIn: cfg.RequireSignIn, bank: cfg.Bank, store: cfg.Store, layout: cfg.Layout, log: cfg.Logger, now: cfg.Now,
		policy: cfg.Policy, displayNames: cfg.DisplayNames, className: cfg.ClassName,
		students: cfg.Students, progress: cfg.Progress}
	if h.policy.Reveal == "" {
		h.policy.Reveal = quiz.RevealAfterLastAttempt
	}
	if _, err := quiz.ParseReveal(string(h.policy.Reveal)); err != nil {
		return fmt.Errorf("quiz: %w", err)
	}
	if h.policy.Attempts < 0 {
		return fmt.Errorf("quiz: attempts must not be negative (0 is no limit), got %d", h.policy.Attempts)
	}
	h.pace = newSubmitLimiter(cmp.Or(cfg.SubmitEvery, DefaultSubmitEvery), cmp.Or(cfg.SubmitBurst, DefaultSubmitBurst))
	if h.bank == nil {
		h.bank = quiz.Lesson()
	}
	if h.store == nil {
		if cfg.Client == nil {
			return fmt.Errorf("quiz: an etcd client or a store is required")
		}
		h.store = etcdstore.New(cfg.Client)
	}
	if h.layout == nil {
		h.layout = plainLayout
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.routePages(e)
	h.routeAPI(e)
	h.routeGrader(e)
	return nil
}

// userOf is the request's user as the front door authenticated it.
func userOf(c echo.Context) pipeline.User {
	_, u, ok := pipeline.FromContext(c.Request().Context())
	if !ok {
		// No front door (a router without the pipeline): nobody.
		return pipeline.Anonymous()
	}
	return u
}

// classOf is the class named by the user's ClassGroupPrefix group.
func classOf(u pipeline.User) string {
	for _, g := range u.Groups {
		if c, ok := strings.CutPrefix(g, ClassGroupPrefix); ok && c != "" {
			return c
		}
	}
	return ""
}

// langOf is the page's language, by the site's one rule (i18n.Of).
func langOf(c echo.Context) i18n.Lang { return i18n.Of(c.Request()) }

// canSeeAttempt: a student sees their own attempts; graders see all.
func canSeeAttempt(u pipeline.User, a *quiz.Attempt) bool {
	return a.Student == u.Name || classroom.CanGrade(u)
}
