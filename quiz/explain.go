package quiz

import (
	"slices"

	"github.com/kubelab/kubelab/web/i18n"
)

// Explained is a graded attempt as its student sees it afterwards: every
// question with what they answered and how it scored, in one language,
// options in the attempt's order and under its ids; and, where the reveal
// policy allows, what was right and why. A question left unanswered never
// shows its right answer.
type Explained struct {
	Quiz         string    `json:"quiz"`
	Attempt      string    `json:"attempt"`
	Lang         i18n.Lang `json:"lang"`
	Title        string    `json:"title"`
	ScoreGiven   int       `json:"scoreGiven"`
	ScoreMaximum int       `json:"scoreMaximum"`
	// Revealed says the reveal policy allowed answers and explanations.
	Revealed  bool                `json:"revealed"`
	Questions []ExplainedQuestion `json:"questions"`
}

// ExplainedQuestion is one question of an Explained attempt.
type ExplainedQuestion struct {
	ID           string            `json:"id"`
	Kind         Kind              `json:"kind"`
	Prompt       string            `json:"prompt"`
	Snippet      string            `json:"snippet,omitempty"`
	Answered     bool              `json:"answered"`
	Correct      bool              `json:"correct"`
	ScoreGiven   int               `json:"scoreGiven"`
	ScoreMaximum int               `json:"scoreMaximum"`
	Options      []ExplainedOption `json:"options"`
	// Lines are a SpotTheBug question's code with the student's marks.
	Lines []ExplainedLine `json:"lines,omitempty"`
	// BugsFound is how many of a SpotTheBug question's bugs (ScoreMaximum)
	// the marks found; absent is none. It is all a student learns of
	// which marks were right before the reveal.
	BugsFound int `json:"bugsFound,omitempty"`
	// Bugs are a SpotTheBug question's bugs, found or not, each explained,
	// once the reveal policy allows.
	Bugs        []ExplainedBug `json:"bugs,omitempty"`
	Explanation string         `json:"explanation,omitempty"`
	Proof       *ProofView     `json:"proof,omitempty"`
}

// ExplainedOption is an option (or reason) with whether it was chosen and,
// where that may be shown, whether it is the answer (for a reason: whether
// a bug has it).
type ExplainedOption struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Chosen bool   `json:"chosen"`
	Right  bool   `json:"right,omitempty"`
}

// ExplainedLine is a line of code, with the student's marks on it.
type ExplainedLine struct {
	N    int    `json:"n"`
	Code string `json:"code"`
	// Marks are the student's marks on the line, one per reason given.
	Marks []LineMark `json:"marks,omitempty"`
	// Buggy says the line is one of a bug's lines, where that may be shown.
	Buggy bool `json:"buggy,omitempty"`
}

// LineMark is one of a student's marks on a line.
type LineMark struct {
	// Reason is the id the attempt shows for the mark's reason; ReasonText
	// its text.
	Reason     string `json:"reason"`
	ReasonText string `json:"reasonText"`
	// Right says the mark found a bug. It is only set once the reveal
	// policy allows: before, which marks were right would say which bugs
	// were found, and so where to look for the rest.
	Right bool `json:"right,omitempty"`
}

// ExplainedBug is a bug, whether it was found, and, where the policy
// allows, why it is one.
type ExplainedBug struct {
	ID          string     `json:"id"`
	Found       bool       `json:"found"`
	Lines       []int      `json:"lines"`
	Reason      string     `json:"reason"`
	Explanation string     `json:"explanation,omitempty"`
	Proof       *ProofView `json:"proof,omitempty"`
}

// ProofView is a link to the lesson's live proof.
type ProofView struct {
	Href  string `json:"href"`
	Label string `json:"label"`
}

func (p Proof) view(lang i18n.Lang) *ProofView {
	return &ProofView{Href: p.Href, Label: p.Label.In(lang)}
}

// Explain pairs a graded attempt's result with its questions in lang.
// reveal is the reveal policy's verdict: it adds the right answers of the
// questions answered, and every question's explanation. Only call it for
// an attempt that has been graded.
func (q *Quiz) Explain(a *Attempt, lang i18n.Lang, reveal bool) Explained {
	r := a.Result
	e := Explained{
		Quiz: q.ID, Attempt: a.ID, Lang: lang, Title: q.Title.In(lang),
		ScoreGiven: r.ScoreGiven, ScoreMaximum: r.ScoreMaximum, Revealed: reveal,
	}
	for i := range q.Questions {
		qu := &q.Questions[i]
		var qr QuestionResult
		if j := slices.IndexFunc(r.Questions, func(x QuestionResult) bool { return x.Question == qu.ID }); j >= 0 {
			qr = r.Questions[j]
		}
		eq := ExplainedQuestion{
			ID: qu.ID, Kind: qu.Kind, Prompt: qu.Prompt.In(lang),
			Answered: qr.Answered, Correct: qr.Correct, ScoreGiven: qr.ScoreGiven, ScoreMaximum: qu.Max(),
		}
		if reveal {
			eq.Explanation, eq.Proof = qu.Explanation.In(lang), qu.Proof.view(lang)
		}
		explainOptions(a, qu, qr, lang, reveal, &eq)
		if qu.Kind == SpotTheBug {
			explainLines(a, qu, qr, lang, reveal, &eq)
		} else {
			eq.Snippet = qu.Snippet
		}
		e.Questions = append(e.Questions, eq)
	}
	return e
}

// explainOptions marks what was chosen and, for an answered question,
// what is right: a right choice always (the student picked it), the rest
// only when revealed. An unanswered question marks nothing right, ever.
func explainOptions(a *Attempt, qu *Question, qr QuestionResult, lang i18n.Lang, reveal bool, eq *ExplainedQuestion) {
	reasons := map[string]bool{}
	for _, b := range qu.Bugs {
		reasons[b.Reason] = true
	}
	chosen := map[string]bool{qr.Choice: qr.Choice != ""}
	for _, m := range qr.Marks {
		chosen[m.Reason] = true
	}
	for _, k := range a.order(qu) {
		o, _ := qu.Option(k.Option)
		key := k.Option == qu.Answer || reasons[k.Option]
		right := qr.Answered && key && (reveal || (qu.Kind == Choice && chosen[k.Option]))
		eq.Options = append(eq.Options, ExplainedOption{ID: k.ID, Text: o.Text.In(lang), Chosen: chosen[k.Option], Right: right})
	}
}

// explainLines shows a SpotTheBug question's code with the student's
// marks and how many bugs they found. Which marks were right, the buggy
// lines and the bugs themselves show only when revealed and answered:
// before, a list of the bugs found would say which one is left to guess.
func explainLines(a *Attempt, qu *Question, qr QuestionResult, lang i18n.Lang, reveal bool, eq *ExplainedQuestion) {
	shown := reveal && qr.Answered
	for n, code := range SnippetLines(qu.Snippet) {
		l := ExplainedLine{N: n + 1, Code: code}
		for _, b := range qu.Bugs {
			l.Buggy = l.Buggy || (shown && slices.Contains(b.Lines, l.N))
		}
		for _, m := range qr.Marks {
			if m.Line != l.N {
				continue
			}
			lm := LineMark{Reason: a.shown(qu, m.Reason), Right: shown && m.Bug != ""}
			if o, ok := qu.Option(m.Reason); ok {
				lm.ReasonText = o.Text.In(lang)
			}
			l.Marks = append(l.Marks, lm)
		}
		eq.Lines = append(eq.Lines, l)
	}
	found := map[string]bool{}
	for _, b := range qr.Bugs {
		found[b.Bug] = b.Found
		if b.Found {
			eq.BugsFound++
		}
	}
	if !shown {
		return
	}
	for _, b := range qu.Bugs {
		o, _ := qu.Option(b.Reason)
		eq.Bugs = append(eq.Bugs, ExplainedBug{
			ID: b.ID, Found: found[b.ID], Lines: b.Lines, Reason: o.Text.In(lang),
			Explanation: b.Explanation.In(lang), Proof: b.Proof.view(lang),
		})
	}
}
