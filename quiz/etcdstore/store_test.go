package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/storage/storagetest"
	"github.com/kubelab/kubelab/web/i18n"
)

// issue issues student an attempt at quizID, as the quiz page does.
func issue(t *testing.T, s *Store, student, class, quizID string, limit int) (*quiz.Attempt, error) {
	t.Helper()
	q, ok := quiz.Lesson().Quiz(quizID)
	if !ok {
		t.Fatalf("no quiz %s", quizID)
	}
	return s.Issue(context.Background(), q.NewAttempt(student, class, time.Now()), limit)
}

// submitBlank grades a blank submission of a, as the handlers do.
func submitBlank(t *testing.T, s *Store, a *quiz.Attempt, limit int) error {
	t.Helper()
	q, _ := quiz.Lesson().Quiz(a.Quiz)
	if err := q.GradeAttempt(a, nil, i18n.English, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s.Submit(context.Background(), a, limit)
}

func TestIssueSubmitGet(t *testing.T) {
	ctx := context.Background()
	s := New(storagetest.StartEtcd(t).Client())
	a, err := issue(t, s, "alice", "k8s-101", quiz.SpotTheBugQuizID, 2)
	if err != nil || a.Number != 1 {
		t.Fatalf("issue: %+v, %v", a, err)
	}
	// Opening the quiz again is the same attempt, not a new one.
	again, err := issue(t, s, "alice", "k8s-101", quiz.SpotTheBugQuizID, 2)
	if err != nil || again.ID != a.ID || fmt.Sprint(again.Options) != fmt.Sprint(a.Options) {
		t.Fatalf("second issue: %+v, %v; want attempt %s again", again, err, a.ID)
	}
	if got, _ := s.List(ctx, quiz.Filter{}); len(got) != 0 {
		t.Errorf("an open attempt is listed: %+v", got)
	}
	// A submission cannot rewrite what the server issued.
	forged := *a
	forged.Number, forged.Options = 7, nil
	if err := submitBlank(t, s, &forged, 2); err != nil {
		t.Fatal(err)
	}
	if err := submitBlank(t, s, a, 2); !errors.Is(err, quiz.ErrAttemptSubmitted) {
		t.Errorf("second submit: %v, want ErrAttemptSubmitted", err)
	}
	got, err := s.Get(ctx, "alice", a.Quiz, a.ID)
	if err != nil || got.Open() || got.Number != 1 || len(got.Options) != 1 || !got.Issued.Equal(a.Issued) || got.Result.ScoreMaximum != 4 {
		t.Errorf("read back %+v (%v), issued %+v", got, err, a)
	}
	if _, err := s.Get(ctx, "bob", a.Quiz, a.ID); !errors.Is(err, quiz.ErrAttemptNotFound) {
		t.Errorf("another student's attempt: %v, want ErrAttemptNotFound", err)
	}
	bobs := *a
	bobs.Student = "bob"
	if err := s.Submit(ctx, &bobs, 2); !errors.Is(err, quiz.ErrAttemptNotFound) {
		t.Errorf("submitting another student's attempt: %v, want ErrAttemptNotFound", err)
	}
	second, err := issue(t, s, "alice", "k8s-101", quiz.SpotTheBugQuizID, 2)
	if err != nil || second.Number != 2 || second.ID == a.ID {
		t.Fatalf("after submitting, a new attempt: %+v, %v", second, err)
	}
	if err := submitBlank(t, s, second, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := issue(t, s, "alice", "k8s-101", quiz.SpotTheBugQuizID, 2); !errors.Is(err, quiz.ErrNoAttemptsLeft) {
		t.Errorf("third issue: %v, want ErrNoAttemptsLeft", err)
	}
	if _, err := issue(t, s, "alice", "k8s-101", quiz.WatchQuizID, 2); err != nil {
		t.Errorf("another quiz has its own attempts: %v", err)
	}
}

// TestSubmitRace: one attempt submitted from eight tabs at once; the
// ModRevision-guarded transactions store exactly one.
func TestSubmitRace(t *testing.T) {
	s := New(storagetest.StartEtcd(t).Client())
	a, err := issue(t, s, "alice", "", quiz.WatchQuizID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]int{}
	for range 8 {
		wg.Go(func() {
			c := *a
			err := submitBlank(t, s, &c, 1)
			mu.Lock()
			results[fmt.Sprint(err)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if results["<nil>"] != 1 || results[quiz.ErrAttemptSubmitted.Error()] != 7 {
		t.Errorf("8 submissions of one attempt: %v", results)
	}
	got, _ := s.List(context.Background(), quiz.Filter{Student: "alice"})
	if len(got) != 1 {
		t.Errorf("%d attempts stored, want 1", len(got))
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	s := New(storagetest.StartEtcd(t).Client())
	s.records.PageSize = 2 // read in several pages
	var all []*quiz.Attempt
	for _, who := range []struct{ student, class, quiz string }{
		{"alice", "a", quiz.WatchQuizID},
		{"alice", "a", quiz.WatchQuizID},
		{"alice", "a", quiz.SpotTheBugQuizID},
		{"al", "b", quiz.WatchQuizID},
		{"al/ice", "b", quiz.WatchQuizID},
		{"bob", "b", quiz.SpotTheBugQuizID},
		{"carol", "", quiz.WatchQuizID},
	} {
		a, err := issue(t, s, who.student, who.class, who.quiz, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := submitBlank(t, s, a, 0); err != nil {
			t.Fatal(err)
		}
		all = append(all, a)
	}
	if _, err := issue(t, s, "alice", "a", quiz.WatchQuizID, 0); err != nil { // open: never listed
		t.Fatal(err)
	}
	tests := []struct {
		f    quiz.Filter
		want []int
	}{
		{quiz.Filter{}, []int{3, 4, 0, 1, 2, 5, 6}},
		{quiz.Filter{Student: "alice"}, []int{0, 1, 2}},
		{quiz.Filter{Student: "al"}, []int{3}},
		{quiz.Filter{Student: "al/ice"}, []int{4}},
		{quiz.Filter{Student: "alice", Quiz: quiz.WatchQuizID}, []int{0, 1}},
		{quiz.Filter{Quiz: quiz.SpotTheBugQuizID}, []int{2, 5}},
		{quiz.Filter{Class: "b"}, []int{3, 4, 5}},
		{quiz.Filter{Class: "b", Quiz: quiz.WatchQuizID}, []int{3, 4}},
		{quiz.Filter{Student: "nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.f), func(t *testing.T) {
			got, err := s.List(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids, want []string
			for _, a := range got {
				ids = append(ids, fmt.Sprintf("%s/%d/%s", a.Student, a.Number, a.ID))
			}
			for _, i := range tt.want {
				want = append(want, fmt.Sprintf("%s/%d/%s", all[i].Student, all[i].Number, all[i].ID))
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", ids, want)
			}
		})
	}
}

// TestIssueCountsEarlierAttempts: attempts a student submitted before
// ledgers were kept count against the limit too.
func TestIssueCountsEarlierAttempts(t *testing.T) {
	ctx := context.Background()
	client := storagetest.StartEtcd(t).Client()
	s := New(client)
	old := quiz.Attempt{ID: "01a22e5b97bbe5d50f76023c", Quiz: quiz.WatchQuizID, Student: "alice", Submitted: time.Now()}
	b, _ := json.Marshal(old)
	if _, err := client.Put(ctx, key("alice", old.Quiz, old.ID), string(b)); err != nil {
		t.Fatal(err)
	}
	if _, err := issue(t, s, "alice", "", quiz.WatchQuizID, 1); !errors.Is(err, quiz.ErrNoAttemptsLeft) {
		t.Errorf("with one earlier attempt and a limit of 1: %v, want ErrNoAttemptsLeft", err)
	}
	a, err := issue(t, s, "alice", "", quiz.WatchQuizID, 2)
	if err != nil || a.Number != 2 {
		t.Errorf("with a limit of 2: %+v, %v; want attempt number 2", a, err)
	}
}

// storedOneMarkPerLine is a spot-the-bug attempt as the store kept it when
// a line took one mark: the polling marked at the sleep, the missing
// timeout not marked, one wrong mark.
const storedOneMarkPerLine = `{"id":"5f0c2a9d3e41b7c8a6d2e0f1","quiz":"spot-the-bug","student":"alice","number":1,
"issued":"2026-11-02T09:00:00Z","lang":"en",
"answers":[{"question":"wait-for-pod-ready","marks":[{"line":4,"reason":"etcd-direct"},{"line":6,"reason":"polling"},{"line":2,"reason":"await-in-loop"}]}],
"result":{"quiz":"spot-the-bug","scoreGiven":1,"scoreMaximum":4,"questions":[{"question":"wait-for-pod-ready","answered":true,"correct":false,"scoreGiven":1,"scoreMaximum":4,
"marks":[{"line":4,"reason":"etcd-direct","bug":"reads-etcd"},{"line":6,"reason":"polling","bug":"polls"},{"line":2,"reason":"await-in-loop"}],
"bugs":[{"bug":"reads-etcd","found":true},{"bug":"polls","found":true},{"bug":"not-ready","found":false},{"bug":"loops-forever","found":false}]}]},
"submitted":"2026-11-02T09:05:00Z"}`

// TestOneMarkPerLineAttemptStillReads: now that a line may hold several
// marks, an attempt stored when it held one still loads, explains, and
// grades to the score it was given.
func TestOneMarkPerLineAttemptStillReads(t *testing.T) {
	ctx := context.Background()
	client := storagetest.StartEtcd(t).Client()
	s := New(client)
	if _, err := client.Put(ctx, key("alice", quiz.SpotTheBugQuizID, "5f0c2a9d3e41b7c8a6d2e0f1"), storedOneMarkPerLine); err != nil {
		t.Fatal(err)
	}
	a, err := s.Get(ctx, "alice", quiz.SpotTheBugQuizID, "5f0c2a9d3e41b7c8a6d2e0f1")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	r, err := q.Grade(a.Answers)
	if err != nil || r.ScoreGiven != a.Result.ScoreGiven || r.ScoreMaximum != a.Result.ScoreMaximum {
		t.Fatalf("graded again: %+v, %v; stored %+v", r, err, a.Result)
	}
	e := q.Explain(a, i18n.English, true).Questions[0]
	if e.BugsFound != 2 || len(e.Lines[5].Marks) != 1 || !e.Lines[5].Marks[0].Right || e.Lines[5].Marks[0].Reason != "polling" ||
		len(e.Lines[1].Marks) != 1 || e.Lines[1].Marks[0].Right || len(e.Bugs) != 4 {
		t.Errorf("explained: %+v", e)
	}
}
