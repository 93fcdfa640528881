package quiz

import "github.com/kubelab/kubelab/web/i18n"

// View is a quiz as a student sees it before submitting: in one language,
// options in the order and under the ids of one attempt, and no field that
// could hold an answer or an explanation.
type View struct {
	Quiz    string `json:"quiz"`
	Attempt string `json:"attempt"`
	// Number is the attempt's place among the student's attempts, from 1.
	Number       int            `json:"number"`
	Lang         i18n.Lang      `json:"lang"`
	Title        string         `json:"title"`
	Intro        string         `json:"intro"`
	ScoreMaximum int            `json:"scoreMaximum"`
	Questions    []QuestionView `json:"questions"`
}

// QuestionView is a question without its answer.
type QuestionView struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Prompt string `json:"prompt"`
	// Snippet is a command's output shown with a Choice question.
	Snippet string `json:"snippet,omitempty"`
	// Lines are the code of a SpotTheBug question, line 1 first.
	Lines []string `json:"lines,omitempty"`
	// Options are the choices, or the reasons a marked line may be wrong,
	// in the attempt's order.
	Options      []OptionView `json:"options"`
	ScoreMaximum int          `json:"scoreMaximum"`
}

// OptionView is an option's id in one attempt and its text in one
// language.
type OptionView struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// View returns the quiz as attempt a shows it in lang: every question's
// options in a's order, under a's ids.
func (q *Quiz) View(a *Attempt, lang i18n.Lang) View {
	v := View{
		Quiz: q.ID, Attempt: a.ID, Number: a.Number, Lang: lang,
		Title: q.Title.In(lang), Intro: q.Intro.In(lang), ScoreMaximum: q.Max(),
	}
	for i := range q.Questions {
		qu := &q.Questions[i]
		qv := QuestionView{ID: qu.ID, Kind: qu.Kind, Prompt: qu.Prompt.In(lang), ScoreMaximum: qu.Max()}
		if qu.Kind == SpotTheBug {
			qv.Lines = SnippetLines(qu.Snippet)
		} else {
			qv.Snippet = qu.Snippet
		}
		for _, k := range a.order(qu) {
			o, _ := qu.Option(k.Option)
			qv.Options = append(qv.Options, OptionView{ID: k.ID, Text: o.Text.In(lang)})
		}
		v.Questions = append(v.Questions, qv)
	}
	return v
}
