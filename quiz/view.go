package quiz

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"regexp"
	"time"
)

// View is a quiz as a student sees it before submitting: in one language,
// options in the order of one attempt, and no field that could hold an
// answer or an explanation.
type View struct {
	Quiz         string         `json:"quiz"`
	Attempt      string         `json:"attempt"`
	Lang         Lang           `json:"lang"`
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
	// shuffled per attempt.
	Options      []OptionView `json:"options"`
	ScoreMaximum int          `json:"scoreMaximum"`
}

// OptionView is an option's id and its text in one language.
type OptionView struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// View returns the quiz as attempt sees it in lang: every question's
// options shuffled by the attempt id, so a reload shows the same order and
// another attempt a different one.
func (q *Quiz) View(attempt string, lang Lang) View {
	v := View{
		Quiz: q.ID, Attempt: attempt, Lang: lang,
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
		for _, o := range q.Shuffled(attempt, qu) {
			qv.Options = append(qv.Options, OptionView{ID: o.ID, Text: o.Text.In(lang)})
		}
		v.Questions = append(v.Questions, qv)
	}
	return v
}

// Shuffled returns qu's options in attempt's order.
func (q *Quiz) Shuffled(attempt string, qu *Question) []Option {
	sum := sha256.Sum256([]byte(q.ID + "\x00" + qu.ID + "\x00" + attempt))
	r := mrand.New(mrand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])))
	opts := append([]Option(nil), qu.Options...)
	r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	return opts
}

// attemptIDPattern: 12 hex digits of Unix milliseconds, so ids sort by
// time, then 12 random ones.
var attemptIDPattern = regexp.MustCompile(`^[0-9a-f]{24}$`)

// NewAttemptID returns a fresh attempt id.
func NewAttemptID(now time.Time) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return fmt.Sprintf("%012x%s", now.UnixMilli()&0xffffffffffff, hex.EncodeToString(b[:]))
}

// ValidAttemptID reports whether id could have come from NewAttemptID.
func ValidAttemptID(id string) bool { return attemptIDPattern.MatchString(id) }
