package quiz

import "slices"

// Explained is a graded attempt as its student sees it afterwards: every
// question with what they answered, what was right, and why, in one
// language, options in the attempt's order.
type Explained struct {
	Quiz         string              `json:"quiz"`
	Attempt      string              `json:"attempt"`
	Lang         Lang                `json:"lang"`
	Title        string              `json:"title"`
	ScoreGiven   int                 `json:"scoreGiven"`
	ScoreMaximum int                 `json:"scoreMaximum"`
	Questions    []ExplainedQuestion `json:"questions"`
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
	// Bugs are a SpotTheBug question's bugs, found or not, each explained.
	Bugs        []ExplainedBug `json:"bugs,omitempty"`
	Explanation string         `json:"explanation"`
	Proof       ProofView      `json:"proof"`
}

// ExplainedOption is an option (or reason) with whether it was chosen and
// whether it is the answer (for a reason: whether a bug has it).
type ExplainedOption struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Chosen bool   `json:"chosen"`
	Right  bool   `json:"right"`
}

// ExplainedLine is a line of code, with the student's mark on it if any.
type ExplainedLine struct {
	N    int    `json:"n"`
	Code string `json:"code"`
	// Reason is the id of the reason the line was marked with, if marked;
	// ReasonText its text.
	Reason     string `json:"reason,omitempty"`
	ReasonText string `json:"reasonText,omitempty"`
	// MarkRight says the mark found a bug.
	MarkRight bool `json:"markRight"`
	// Buggy says the line is one of a bug's lines.
	Buggy bool `json:"buggy"`
}

// ExplainedBug is a bug, whether it was found, and why it is one.
type ExplainedBug struct {
	ID          string    `json:"id"`
	Found       bool      `json:"found"`
	Lines       []int     `json:"lines"`
	Reason      string    `json:"reason"`
	Explanation string    `json:"explanation"`
	Proof       ProofView `json:"proof"`
}

// ProofView is a link to the lesson's live proof.
type ProofView struct {
	Href  string `json:"href"`
	Label string `json:"label"`
}

func (p Proof) view(lang Lang) ProofView { return ProofView{Href: p.Href, Label: p.Label.In(lang)} }

// Explain pairs a graded attempt's result with the answers and their
// explanations in lang. Only call it for an attempt that has been graded.
func (q *Quiz) Explain(attempt string, r Result, lang Lang) Explained {
	e := Explained{
		Quiz: q.ID, Attempt: attempt, Lang: lang, Title: q.Title.In(lang),
		ScoreGiven: r.ScoreGiven, ScoreMaximum: r.ScoreMaximum,
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
			Explanation: qu.Explanation.In(lang), Proof: qu.Proof.view(lang),
		}
		reasons := map[string]bool{}
		for _, b := range qu.Bugs {
			reasons[b.Reason] = true
		}
		chosen := map[string]bool{qr.Choice: qr.Choice != ""}
		for _, m := range qr.Marks {
			chosen[m.Reason] = true
		}
		for _, o := range q.Shuffled(attempt, qu) {
			right := o.ID == qu.Answer || reasons[o.ID]
			eq.Options = append(eq.Options, ExplainedOption{ID: o.ID, Text: o.Text.In(lang), Chosen: chosen[o.ID], Right: right})
		}
		if qu.Kind == SpotTheBug {
			explainLines(qu, qr, lang, &eq)
		} else {
			eq.Snippet = qu.Snippet
		}
		e.Questions = append(e.Questions, eq)
	}
	return e
}

func explainLines(qu *Question, qr QuestionResult, lang Lang, eq *ExplainedQuestion) {
	for n, code := range SnippetLines(qu.Snippet) {
		l := ExplainedLine{N: n + 1, Code: code}
		for _, b := range qu.Bugs {
			l.Buggy = l.Buggy || slices.Contains(b.Lines, l.N)
		}
		for _, m := range qr.Marks {
			if m.Line == l.N {
				l.Reason, l.MarkRight = m.Reason, m.Bug != ""
				if o, ok := qu.Option(m.Reason); ok {
					l.ReasonText = o.Text.In(lang)
				}
			}
		}
		eq.Lines = append(eq.Lines, l)
	}
	found := map[string]bool{}
	for _, b := range qr.Bugs {
		found[b.Bug] = b.Found
	}
	for _, b := range qu.Bugs {
		o, _ := qu.Option(b.Reason)
		eq.Bugs = append(eq.Bugs, ExplainedBug{
			ID: b.ID, Found: found[b.ID], Lines: b.Lines, Reason: o.Text.In(lang),
			Explanation: b.Explanation.In(lang), Proof: b.Proof.view(lang),
		})
	}
}
