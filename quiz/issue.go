package quiz

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kubelab/kubelab/web/i18n"
)

// NewAttempt makes a fresh attempt at q for a student: a random id, and
// for every question its options in a random order, each under a random id
// of this attempt's own. It is not stored; a Store issues it.
func (q *Quiz) NewAttempt(student, class string, now time.Time) *Attempt {
	a := &Attempt{ID: randomID(16), Quiz: q.ID, Student: student, Class: class, Issued: now.UTC()}
	used := map[string]bool{}
	for i := range q.Questions {
		qu := &q.Questions[i]
		qo := QuestionOptions{Question: qu.ID}
		for _, o := range qu.Options {
			id := randomID(6)
			for used[id] {
				id = randomID(6)
			}
			used[id] = true
			qo.Options = append(qo.Options, OptionKey{ID: id, Option: o.ID})
		}
		// The order only has to differ between attempts; the ids, which
		// carry the key, come from crypto/rand.
		mrand.Shuffle(len(qo.Options), func(i, j int) { qo.Options[i], qo.Options[j] = qo.Options[j], qo.Options[i] })
		a.Options = append(a.Options, qo)
	}
	return a
}

// randomID is n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// order is qu's options as a shows them. An attempt stored before
// attempts had ids of their own shows the bank's ids in the bank's order,
// and a retired option it chose after them.
func (a *Attempt) order(qu *Question) []OptionKey {
	for _, qo := range a.Options {
		if qo.Question == qu.ID {
			return qo.Options
		}
	}
	keys := make([]OptionKey, len(qu.Options))
	for i, o := range qu.Options {
		keys[i] = OptionKey{ID: o.ID, Option: o.ID}
	}
	for _, ans := range a.Answers {
		if ans.Question == qu.ID && slices.ContainsFunc(qu.Retired, func(o Option) bool { return o.ID == ans.Choice }) {
			keys = append(keys, OptionKey{ID: ans.Choice, Option: ans.Choice})
		}
	}
	return keys
}

// shown maps a bank option id of qu to the id a shows for it.
func (a *Attempt) shown(qu *Question, option string) string {
	for _, k := range a.order(qu) {
		if k.Option == option {
			return k.ID
		}
	}
	return ""
}

// ToBank rewrites answers given in a's option ids into the bank's. An id
// this attempt does not show, for instance one from another attempt, is a
// NotFound problem; questions the quiz does not have are left for
// Validate to report.
func (a *Attempt) ToBank(q *Quiz, answers []Answer) ([]Answer, error) {
	var probs []Problem
	out := make([]Answer, len(answers))
	for i, ans := range answers {
		out[i] = Answer{Question: ans.Question, Choice: ans.Choice}
		qu, ok := q.Question(ans.Question)
		if !ok {
			out[i].Marks = ans.Marks
			continue
		}
		f := fmt.Sprintf("answers[%d]", i)
		if ans.Choice != "" {
			if out[i].Choice = a.bankID(qu, ans.Choice); out[i].Choice == "" {
				probs = append(probs, Problem{Field: f + ".choice", Value: ans.Choice, Type: ProblemNotFound, Detail: a.offers(qu)})
			}
		}
		for j, m := range ans.Marks {
			reason := a.bankID(qu, m.Reason)
			if reason == "" {
				probs = append(probs, Problem{Field: fmt.Sprintf("%s.marks[%d].reason", f, j), Value: m.Reason, Type: ProblemNotFound, Detail: a.offers(qu)})
			}
			out[i].Marks = append(out[i].Marks, Mark{Line: m.Line, Reason: reason})
		}
	}
	if len(probs) > 0 {
		return nil, &InvalidError{Quiz: q.ID, Problems: probs}
	}
	return out, nil
}

func (a *Attempt) bankID(qu *Question, id string) string {
	for _, k := range a.order(qu) {
		if k.ID == id {
			return k.Option
		}
	}
	return ""
}

// offers lists the ids a shows for qu's options, sorted: the order shown
// is the attempt's, and nothing else in them tells the right one.
func (a *Attempt) offers(qu *Question) string {
	var ids []string
	for _, k := range a.order(qu) {
		ids = append(ids, k.ID)
	}
	slices.Sort(ids)
	return "question " + qu.ID + " of attempt " + a.ID + " offers " + strings.Join(ids, ", ")
}

// GradeAttempt grades answers, given in a's option ids, and records them
// and the result on a as submitted at now, in lang. a is not stored.
func (q *Quiz) GradeAttempt(a *Attempt, answers []Answer, lang i18n.Lang, now time.Time) error {
	bank, err := a.ToBank(q, answers)
	if err != nil {
		return err
	}
	r, err := q.Grade(bank)
	if err != nil {
		return err
	}
	a.Answers, a.Result, a.Lang, a.Submitted = bank, r, lang, now.UTC()
	return nil
}
