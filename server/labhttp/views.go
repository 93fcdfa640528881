package labhttp

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web/i18n"
)

// LabSummary names a lab in the list of labs, with the student's progress.
type LabSummary struct {
	ID      string `json:"id"`
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Intro   string `json:"intro"`
	Lesson  string `json:"lesson"`
	Steps   int    `json:"steps"`
	Passed  int    `json:"passed"`
	Started bool   `json:"started"`
	Done    bool   `json:"done"`
	// Runs is how often the student finished the lab before doing it again.
	Runs int `json:"runs,omitempty"`
}

// LabList is the answer to GET /kubelab/v1/labs.
type LabList struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	User       string       `json:"user"`
	Namespace  string       `json:"namespace"`
	Current    string       `json:"current,omitempty"`
	Items      []LabSummary `json:"items"`
}

// LabView is one lab with the student's progress through it.
type LabView struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	ID         string     `json:"id"`
	Number     int        `json:"number"`
	Title      string     `json:"title"`
	Intro      string     `json:"intro"`
	Lesson     string     `json:"lesson"`
	Namespace  string     `json:"namespace"`
	Started    bool       `json:"started"`
	Done       bool       `json:"done"`
	Current    int        `json:"current"`
	Steps      []StepView `json:"steps"`
	Lang       i18n.Lang  `json:"lang"`
	// Runs is how often the student finished the lab before doing it again.
	Runs int `json:"runs,omitempty"`
}

// StepView is one step: what to do and whether it is done.
type StepView struct {
	ID      string `json:"id"`
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Do      string `json:"do"`
	Command string `json:"command,omitempty"`
	// Open is the page where a step the terminal cannot do is done.
	Open string `json:"open,omitempty"`
	Hint string `json:"hint"`
	How  string `json:"how"`
	// State is passed, current or todo.
	State    string       `json:"state"`
	Evidence string       `json:"evidence,omitempty"`
	PassedAt *time.Time   `json:"passedAt,omitempty"`
	Question bool         `json:"question,omitempty"`
	Choices  []ChoiceView `json:"choices,omitempty"`
	Tries    int          `json:"tries,omitempty"`
	// Why says why the current step has not passed, when the student did
	// something close (a label that changed nothing stored).
	Why string `json:"why,omitempty"`
}

// ChoiceView is one option of a question step.
type ChoiceView struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// The states of a step.
const (
	StatePassed  = "passed"
	StateCurrent = "current"
	StateTodo    = "todo"
)

func number(all []*labs.Lab, id string) int {
	for i, l := range all {
		if l.ID == id {
			return i + 1
		}
	}
	return 0
}

func listView(all []*labs.Lab, p *labs.Progress, lang i18n.Lang) LabList {
	out := LabList{APIVersion: "kubelab.io/v1", Kind: "LabList", User: p.User, Namespace: p.Namespace, Current: p.Current, Items: []LabSummary{}}
	for i, l := range all {
		s := LabSummary{ID: l.ID, Number: i + 1, Title: l.Title.In(lang), Intro: l.Intro.In(lang), Lesson: l.Lesson, Steps: len(l.Steps)}
		if lp := p.Labs[l.ID]; lp != nil {
			s.Started, s.Passed, s.Done, s.Runs = true, min(lp.Step, len(l.Steps)), lp.Done(l), len(lp.Runs)
		}
		out.Items = append(out.Items, s)
	}
	return out
}

func labView(all []*labs.Lab, l *labs.Lab, p *labs.Progress, lang i18n.Lang) LabView {
	v := LabView{APIVersion: "kubelab.io/v1", Kind: "Lab", ID: l.ID, Number: number(all, l.ID), Title: l.Title.In(lang), Intro: l.Intro.In(lang),
		Lesson: l.Lesson, Namespace: p.Namespace, Lang: lang}
	lp := p.Labs[l.ID]
	if lp != nil {
		v.Started, v.Done, v.Current, v.Runs = true, lp.Done(l), lp.Step, len(lp.Runs)
	}
	for i := range l.Steps {
		st := &l.Steps[i]
		sv := StepView{ID: st.ID, Number: i + 1, Title: st.Title.In(lang), Do: st.Do.In(lang), Hint: st.Hint.In(lang), How: st.How.In(lang),
			Command: strings.ReplaceAll(st.Command, "NS", p.Namespace), Open: st.Open, Question: st.IsQuestion(), State: StateTodo}
		for _, c := range st.Choices {
			sv.Choices = append(sv.Choices, ChoiceView{ID: c.ID, Text: c.Text.In(lang)})
		}
		if lp != nil {
			sv.Tries = lp.Tries[st.ID]
			switch pass, ok := lp.Passed[st.ID]; {
			case ok:
				at := pass.At
				sv.State, sv.Evidence, sv.PassedAt = StatePassed, pass.Evidence.In(lang), &at
			case i == lp.Step:
				sv.State, sv.Why = StateCurrent, lp.Why.In(lang)
			}
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

// titles names labs and quizzes in a page's language: the dashboard shows
// words, not ids.
type titles struct {
	lang    i18n.Lang
	labs    []*labs.Lab
	quizzes *quiz.Bank
}

// lessonQuizzes is the quiz bank the quiz pages serve, for its titles.
var lessonQuizzes = quiz.Lesson()

func titlesIn(lang i18n.Lang, all []*labs.Lab) titles {
	return titles{lang: lang, labs: all, quizzes: lessonQuizzes}
}

// lab is lab id's title, or the id of a lab this server does not have.
func (t titles) lab(id string) string {
	if l := labs.Find(t.labs, id); l != nil {
		return l.Title.In(t.lang)
	}
	return id
}

// quiz is quiz id's title, or the id of a quiz the bank does not have.
func (t titles) quiz(id string) string {
	if q, ok := t.quizzes.Quiz(id); ok {
		return q.Title.In(t.lang)
	}
	return id
}

// step is the title of step n (1-based) of lab id.
func (t titles) step(id string, n int) string {
	if l := labs.Find(t.labs, id); l != nil && n >= 1 && n <= len(l.Steps) {
		return l.Steps[n-1].Title.In(t.lang)
	}
	return ""
}

// ago says how long before now t was, in words: "3 min ago", in Thai
// "3 นาทีที่แล้ว". A time in the future (another replica's clock) is "just
// now".
func ago(now, t time.Time, s uiText) string {
	switch d := now.Sub(t); {
	case d < 45*time.Second:
		return s.JustNow
	case d < time.Hour:
		return fmt.Sprintf(s.MinAgo, max(1, int(d/time.Minute)))
	case d < 24*time.Hour:
		return fmt.Sprintf(s.HoursAgo, int(d/time.Hour))
	default:
		return fmt.Sprintf(s.DaysAgo, int(d/(24*time.Hour)))
	}
}

// span says a duration in words, "1 h 30 min" or in Thai "1 ชั่วโมง 30
// นาที", to the second: not Go's "1h30m0s" in a sentence.
func span(d time.Duration, s uiText) string {
	var parts []string
	if h := int(d / time.Hour); h > 0 {
		parts = append(parts, fmt.Sprintf(s.Hours, h))
	}
	if m := int(d % time.Hour / time.Minute); m > 0 {
		parts = append(parts, fmt.Sprintf(s.Minutes, m))
	}
	if sec := int(d % time.Minute / time.Second); sec > 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf(s.Seconds, sec))
	}
	return strings.Join(parts, " ")
}

// label is how a student is named on the instructor's pages: the name
// they typed, else their user name.
// progress orders students by how far they got: labs finished, then the
// step of the lab they are on.
func (r StudentRow) progress() int { return r.LabsDone*1000 + r.Step }

// updatedUnix is the last progress in Unix seconds, 0 for none.
func (r StudentRow) updatedUnix() int64 {
	if r.Updated == nil {
		return 0
	}
	return r.Updated.Unix()
}

// score is the student's best scores of every quiz, summed.
func (r StudentRow) score() int {
	total := 0
	for _, q := range r.Quizzes {
		total += q.ScoreGiven
	}
	return total
}

// count is how many students are in state st.
func (v *ClassView) count(st RowState) int {
	n := 0
	for _, r := range v.Students {
		if r.State == st {
			n++
		}
	}
	return n
}

func (r StudentRow) label() string {
	if r.DisplayName != "" {
		return r.DisplayName
	}
	return r.User
}

// requestTarget is what a request acted on, as the tracer names it:
// "pods in alice", "pods/web in alice", or the path of a non-resource one.
func requestTarget(r RequestRow) string {
	if r.Resource == "" {
		return r.Path
	}
	t := r.Resource
	if r.Name != "" {
		t += "/" + r.Name
	}
	if r.Namespace != "" {
		t += " -n " + r.Namespace
	}
	return t
}
