package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func attempt(t *testing.T, student, class, quizID string, at time.Time) *quiz.Attempt {
	t.Helper()
	q, ok := quiz.Lesson().Quiz(quizID)
	if !ok {
		t.Fatalf("no quiz %s", quizID)
	}
	answers := []quiz.Answer{{Question: q.Questions[0].ID}}
	if q.Questions[0].Kind == quiz.Choice {
		answers[0].Choice = q.Questions[0].Options[0].ID
	} else {
		answers[0].Marks = []quiz.Mark{{Line: 4, Reason: "etcd-direct"}}
	}
	r, err := q.Grade(answers)
	if err != nil {
		t.Fatal(err)
	}
	return &quiz.Attempt{
		ID: quiz.NewAttemptID(at), Quiz: quizID, Student: student, Class: class, Lang: quiz.English,
		Answers: answers, Result: r, Submitted: at.UTC().Truncate(time.Millisecond),
	}
}

func TestCreateGet(t *testing.T) {
	ctx := context.Background()
	s := New(storagetest.StartEtcd(t).Client())
	a := attempt(t, "alice", "k8s-101", quiz.SpotTheBugQuizID, time.Now())
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, a); !errors.Is(err, quiz.ErrAttemptExists) {
		t.Errorf("second create: %v, want ErrAttemptExists", err)
	}
	got, err := s.Get(ctx, "alice", a.Quiz, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != a.ID || got.Result.ScoreGiven != 1 || got.Result.ScoreMaximum != 2 || !got.Submitted.Equal(a.Submitted) || got.Class != "k8s-101" {
		t.Errorf("read back %+v, stored %+v", got, a)
	}
	if _, err := s.Get(ctx, "bob", a.Quiz, a.ID); !errors.Is(err, quiz.ErrAttemptNotFound) {
		t.Errorf("another student's attempt: %v, want ErrAttemptNotFound", err)
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	s := New(storagetest.StartEtcd(t).Client())
	s.pageSize = 2 // read in several pages
	t0 := time.Now()
	var all []*quiz.Attempt
	for i, who := range []struct{ student, class, quiz string }{
		{"alice", "a", quiz.WatchQuizID},
		{"alice", "a", quiz.WatchQuizID},
		{"alice", "a", quiz.SpotTheBugQuizID},
		{"al", "b", quiz.WatchQuizID},
		{"al/ice", "b", quiz.WatchQuizID},
		{"bob", "b", quiz.SpotTheBugQuizID},
		{"carol", "", quiz.WatchQuizID},
	} {
		a := attempt(t, who.student, who.class, who.quiz, t0.Add(time.Duration(i)*time.Millisecond))
		if err := s.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		all = append(all, a)
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
				ids = append(ids, a.Student+"/"+a.ID)
			}
			for _, i := range tt.want {
				want = append(want, all[i].Student+"/"+all[i].ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", ids, want)
			}
		})
	}
}
