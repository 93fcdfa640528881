package labhttp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/quiz/etcdstore"
	"github.com/kubelab/kubelab/server"
)

// The instructor's room holds the widest content it can be given, in
// English and Thai, light and dark, on a desktop and on a 390 px phone:
// display names at the sign-in form's cap (Thai, and one Latin word with
// no place to break), the longest namespace a name gives, a 63-character
// class, requests for 253-character names and paths, and 20 quiz attempts
// from a year ago to now. What the pages list is made here, on purpose,
// so that what is measured does not depend on what the machine was doing.
func TestInstructorsRoomHoldsItsWidestContent(t *testing.T) {
	t.Parallel()
	class := strings.Repeat("k8s-", 15) + "101" // 63 characters, a DNS label's most
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.ClassName = class })
	names := []string{
		thaiAtCap(),
		strings.Repeat("W", classroom.MaxDisplayNameRunes),
	}
	var students []user
	for _, name := range names {
		u := student(t, lab, name)
		students = append(students, u)
		for _, l := range labs.All() {
			u.start(l.ID)
		}
		// A resource and a path of the longest names kube takes, and a
		// request that impersonates (refused, and listed with its --as).
		long := strings.Repeat("a", 253)
		u.get("/api/v1/namespaces/" + u.name + "/configmaps/" + long)
		u.get("/" + long[:252])
		u.do("GET", "/api/v1/namespaces/"+u.name+"/secrets", "", "", "Impersonate-User", strings.Repeat("b", 63))
		seedAttempts(t, lab, u.name, class, 20)
	}

	ctx := browsertest.Start(t)
	browsertest.SignInToDashboard(t, ctx, lab.URL(), instructorToken)

	// Each language on each screen, the themes taken in turn: a theme
	// changes colours, not widths, and each is seen in both languages and
	// on both screens.
	for _, v := range []struct {
		lang, theme, screen string
		width, height       int64
	}{
		{"en", "light", "desktop", 1280, 900},
		{"en", "dark", "phone", 390, 844},
		{"th", "dark", "desktop", 1280, 900},
		{"th", "light", "phone", 390, 844},
	} {
		where := v.lang + "-" + v.theme + "-" + v.screen
		browsertest.Do(t, ctx, "the screen", chromedp.EmulateViewport(v.width, v.height))
		open(t, ctx, lab.URL()+"/labs/dashboard?lang="+v.lang, v.theme, `document.querySelectorAll("tr[data-user]").length === 2`)
		browsertest.NoWiderThan(t, ctx, "the dashboard ["+where+"]", int(v.width))
		browsertest.ShotPage(t, ctx, "room-widest-"+where)
		for i, u := range students {
			open(t, ctx, lab.URL()+"/labs/dashboard/students/"+u.name+"?lang="+v.lang, v.theme,
				`document.querySelectorAll("[data-attempts] tbody tr").length === 20 && document.querySelector("[data-requests]") !== null`)
			browsertest.NoWiderThan(t, ctx, fmt.Sprintf("the drill-down of student %d [%s]", i+1, where), int(v.width))
			browsertest.ShotPage(t, ctx, fmt.Sprintf("room-widest-student%d-%s", i+1, where))
		}
	}
}

// thaiAtCap is a Thai display name of the sign-in form's most characters:
// five times thaiName, then a surname, 64 in all.
func thaiAtCap() string {
	name := strings.Repeat(thaiName+" ", 5) + "ศรีสุวรรณ"
	if n := utf8.RuneCountInString(name); n != classroom.MaxDisplayNameRunes {
		panic(fmt.Sprintf("the Thai name has %d characters, not the cap", n))
	}
	return name
}

// open loads a page in a theme and waits until ready holds on it.
func open(t *testing.T, ctx context.Context, url, theme, ready string) {
	t.Helper()
	browsertest.Do(t, ctx, "open "+url, chromedp.Navigate(url))
	browsertest.WaitJS(t, ctx, "the page at "+url, ready)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "`+theme+`", true)`)
}

// seedAttempts stores n submitted attempts of the student's at the watch
// quiz, the first a year ago, the last a minute ago, as the quiz's own
// store keeps them: twenty submissions through the pages would wait on
// the per-user pace for a minute.
func seedAttempts(t *testing.T, lab *kubelabtest.Lab, student, class string, n int) {
	t.Helper()
	store := etcdstore.New(lab.EtcdClient())
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range n {
		at := now.Add(-time.Duration(n-i) * 365 * 24 * time.Hour / time.Duration(n)).Truncate(time.Second)
		a := &quiz.Attempt{ID: fmt.Sprintf("%032x", i+1), Quiz: quiz.WatchQuizID, Student: student, Class: class, Issued: at}
		issued, err := store.Issue(ctx, a, 0)
		if err != nil {
			t.Fatal(err)
		}
		issued.Submitted, issued.Lang = at.Add(time.Minute), "th"
		issued.Result = quiz.Result{ScoreGiven: i % 6, ScoreMaximum: 5}
		if err := store.Submit(ctx, issued, 0); err != nil {
			t.Fatal(err)
		}
	}
}
