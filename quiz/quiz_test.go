package quiz_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web/i18n"
)

// The lesson's answers, from its "Show the answer" and answer key.
var lessonAnswers = map[string]string{
	"gone-410":           "compacted-relist",
	"resource-version":   "etcd-revision",
	"initial-added":      "initial-replay",
	"etcd-raw":           "protobuf",
	"crd-vs-aggregation": "where-stored",
}

func watchQuiz(t *testing.T) *quiz.Quiz {
	t.Helper()
	q, ok := quiz.Lesson().Quiz(quiz.WatchQuizID)
	if !ok {
		t.Fatalf("no quiz %q", quiz.WatchQuizID)
	}
	return q
}

func TestLessonBank(t *testing.T) {
	b := quiz.Lesson()
	if got := len(b.Quizzes()); got != 2 {
		t.Fatalf("quizzes: %d, want the five questions and spot-the-bug", got)
	}
	q := watchQuiz(t)
	if len(q.Questions) != 5 {
		t.Fatalf("questions: %d, want the lesson's 5", len(q.Questions))
	}
	for _, qu := range q.Questions {
		if len(qu.Options) != 4 {
			t.Errorf("%s: %d options, want 4", qu.ID, len(qu.Options))
		}
		for _, text := range []i18n.Text{qu.Prompt, qu.Explanation, qu.Proof.Label} {
			if text.EN == "" || text.TH == "" {
				t.Errorf("%s: missing a translation: %+v", qu.ID, text)
			}
		}
		for _, o := range qu.Options {
			if o.Text.EN == "" || o.Text.TH == "" {
				t.Errorf("%s/%s: missing a translation", qu.ID, o.ID)
			}
		}
		if !strings.HasPrefix(qu.Proof.Href, "/lesson/") {
			t.Errorf("%s: proof %q is not a lesson anchor", qu.ID, qu.Proof.Href)
		}
	}
}

func TestGradeEveryQuestion(t *testing.T) {
	q := watchQuiz(t)
	for _, qu := range q.Questions {
		right, ok := lessonAnswers[qu.ID]
		if !ok {
			t.Fatalf("question %s is not in the lesson", qu.ID)
		}
		for _, o := range qu.Options {
			t.Run(qu.ID+"/"+o.ID, func(t *testing.T) {
				r, err := q.Grade([]quiz.Answer{{Question: qu.ID, Choice: o.ID}})
				if err != nil {
					t.Fatal(err)
				}
				qr := r.Questions[slices.IndexFunc(r.Questions, func(x quiz.QuestionResult) bool { return x.Question == qu.ID })]
				want := o.ID == right
				if qr.Correct != want || (qr.ScoreGiven == 1) != want || r.ScoreGiven != qr.ScoreGiven || !qr.Answered {
					t.Errorf("choice %s: %+v, total %d; want correct=%v", o.ID, qr, r.ScoreGiven, want)
				}
			})
		}
	}
}

func TestGradeWholeQuiz(t *testing.T) {
	q := watchQuiz(t)
	var all []quiz.Answer
	for id, choice := range lessonAnswers {
		all = append(all, quiz.Answer{Question: id, Choice: choice})
	}
	r, err := q.Grade(all)
	if err != nil || r.ScoreGiven != 5 || r.ScoreMaximum != 5 {
		t.Fatalf("all right: %+v, %v", r, err)
	}
	r, err = q.Grade(all[:2])
	if err != nil || r.ScoreGiven != 2 || len(r.Questions) != 5 {
		t.Fatalf("two answered: %+v, %v", r, err)
	}
	for _, qr := range r.Questions {
		if !qr.Answered && (qr.Correct || qr.ScoreGiven != 0) {
			t.Errorf("unanswered %s scored: %+v", qr.Question, qr)
		}
	}
	r, err = q.Grade(nil)
	if err != nil || r.ScoreGiven != 0 || r.ScoreMaximum != 5 {
		t.Fatalf("nothing answered: %+v, %v", r, err)
	}
}

// margin is how much longer than every other option a right one may be:
// beyond it, picking the longest answer scores without understanding.
const margin = 1.15

// TestRightAnswersAreNotTheLongest fails when a right option (or a reason a
// bug has) is the longest of its question by more than margin, when a
// wrong one is so short it gives itself away, or when an option points
// back at the lesson instead of saying something.
func TestRightAnswersAreNotTheLongest(t *testing.T) {
	selfRefs := []string{"shown above", "as a real", "the lesson", "proven above", "ข้างบน", "บทเรียน", "พิสูจน์แล้ว"}
	for _, q := range quiz.Lesson().Quizzes() {
		for _, qu := range q.Questions {
			right := map[string]bool{qu.Answer: true}
			for _, b := range qu.Bugs {
				right[b.Reason] = true
			}
			for _, lang := range []i18n.Lang{i18n.English, i18n.Thai} {
				longestRight, longestWrong, shortestWrong := 0, 0, 1<<30
				for _, o := range qu.Options {
					text := o.Text.In(lang)
					n := utf8.RuneCountInString(text)
					for _, ref := range selfRefs {
						if strings.Contains(strings.ToLower(text), ref) {
							t.Errorf("%s/%s (%s): %q refers back to the lesson", qu.ID, o.ID, lang, text)
						}
					}
					if right[o.ID] {
						longestRight = max(longestRight, n)
					} else {
						longestWrong, shortestWrong = max(longestWrong, n), min(shortestWrong, n)
					}
				}
				if float64(longestRight) > margin*float64(longestWrong) {
					t.Errorf("%s (%s): a right option has %d characters, the longest wrong one %d", qu.ID, lang, longestRight, longestWrong)
				}
				if float64(shortestWrong) < 0.6*float64(longestRight) {
					t.Errorf("%s (%s): a wrong option has %d characters against the right one's %d: too short to be believed", qu.ID, lang, shortestWrong, longestRight)
				}
			}
		}
	}
}

// keyLongest counts the Choice questions of quizzes whose longest option,
// in lang, is the answer (a tie counts against the bank), and the
// questions counted.
func keyLongest(quizzes []*quiz.Quiz, lang i18n.Lang) (longest, questions int) {
	for _, q := range quizzes {
		for _, qu := range q.Questions {
			if qu.Kind != quiz.Choice {
				continue
			}
			questions++
			key, _ := qu.Option(qu.Answer)
			n := utf8.RuneCountInString(key.Text.In(lang))
			if !slices.ContainsFunc(qu.Options, func(o quiz.Option) bool {
				return o.ID != qu.Answer && utf8.RuneCountInString(o.Text.In(lang)) > n
			}) {
				longest++
			}
		}
	}
	return longest, questions
}

// chanceBound is how many of n questions of k options a bank written
// blind to length may have the answer as the longest option: the smallest
// b that such a bank, the key longest with probability 1/k each time,
// exceeds less than one time in eight (binomial). For the bank's five
// questions of four options it is 2: P(more than 2) = 0.10, so a bank that
// pays no attention to length passes nine times in ten, while one whose
// key is the longest in three questions of five (the habit of writing the
// key with care and the distractors in haste) fails.
func chanceBound(n, k int) int {
	p := 1 / float64(k)
	dist := []float64{1}
	for range n {
		next := make([]float64, len(dist)+1)
		for i, v := range dist {
			next[i] += v * (1 - p)
			next[i+1] += v * p
		}
		dist = next
	}
	tail := 1.0
	for b, v := range dist {
		if tail -= v; tail < 1.0/8 {
			return b
		}
	}
	return n
}

// TestKeyIsTheLongestNoMoreThanChance: across the whole bank, in each
// language, picking the longest option finds the answer no more often
// than chance would; and the check does catch a bank whose every key is
// the longest.
func TestKeyIsTheLongestNoMoreThanChance(t *testing.T) {
	bank := quiz.Lesson().Quizzes()
	for _, lang := range []i18n.Lang{i18n.English, i18n.Thai} {
		longest, n := keyLongest(bank, lang)
		if bound := chanceBound(n, 4); longest > bound {
			t.Errorf("%s: the answer is the longest option in %d of %d questions; chance allows %d", lang, longest, n, bound)
		}
	}
	biased := quiz.Lesson().Quizzes()
	for _, q := range biased {
		for i := range q.Questions {
			qu := &q.Questions[i]
			for j := range qu.Options {
				if qu.Options[j].ID == qu.Answer {
					qu.Options[j].Text.EN += strings.Repeat(" and so on", 20)
				}
			}
		}
	}
	if longest, n := keyLongest(biased, i18n.English); longest <= chanceBound(n, 4) {
		t.Errorf("a bank whose every key is the longest passes: %d of %d", longest, n)
	}
}

// absolutes are words that make an option easy to strike without the
// lesson: "always", "never", "only", "alone" are rarely true of a system,
// and students know it. Thai has its own.
var absolutes = map[i18n.Lang][]string{
	i18n.English: {"always", "never", "only", "alone", "none", "nothing", "every time", "no matter"},
	i18n.Thai:    {"เสมอ", "ไม่เคย", "เท่านั้น", "เฉพาะ", "แค่", "ตามลำพัง", "อย่างเดียว", "มีแต่", "ไม่ว่า"},
}

// usesWord reports whether text uses word: a whole word in English,
// anywhere in Thai, which writes no spaces between words.
func usesWord(text, word string, lang i18n.Lang) bool {
	if lang == i18n.Thai {
		return strings.Contains(text, word)
	}
	return regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(word) + `\b`).MatchString(text)
}

// TestDistractorsAreNotAbsolute: no wrong option (or reason no bug has)
// uses an absolute word unless a right one of its question does too.
func TestDistractorsAreNotAbsolute(t *testing.T) {
	for _, q := range quiz.Lesson().Quizzes() {
		for _, qu := range q.Questions {
			right := map[string]bool{qu.Answer: true}
			for _, b := range qu.Bugs {
				right[b.Reason] = true
			}
			for lang, words := range absolutes {
				for _, word := range words {
					keyUses := slices.ContainsFunc(qu.Options, func(o quiz.Option) bool { return right[o.ID] && usesWord(o.Text.In(lang), word, lang) })
					for _, o := range qu.Options {
						if !right[o.ID] && !keyUses && usesWord(o.Text.In(lang), word, lang) {
							t.Errorf("%s/%s (%s): %q says %q, which no right option does", qu.ID, o.ID, lang, o.Text.In(lang), word)
						}
					}
				}
			}
		}
	}
}

func TestSpotTheBug(t *testing.T) {
	q, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	qu := q.Questions[0]
	lines := quiz.SnippetLines(qu.Snippet)
	if len(lines) != 8 || !strings.Contains(lines[3], "readEtcdDirectly") || !strings.Contains(lines[5], "sleep(500)") {
		t.Fatalf("snippet lines: %q", lines)
	}
	tests := []struct {
		name  string
		marks []quiz.Mark
		score int
		found []string
	}{
		{"all four", []quiz.Mark{{4, "etcd-direct"}, {6, "polling"}, {5, "running-not-ready"}, {3, "no-timeout"}}, 4, []string{"reads-etcd", "polls", "not-ready", "loops-forever"}},
		{"the two big ones", []quiz.Mark{{4, "etcd-direct"}, {6, "polling"}}, 2, []string{"reads-etcd", "polls"}},
		{"the two big ones, other lines", []quiz.Mark{{5, "etcd-direct"}, {3, "polling"}}, 2, []string{"reads-etcd", "polls"}},
		{"the two big ones, each on both its lines", []quiz.Mark{{4, "etcd-direct"}, {5, "etcd-direct"}, {3, "polling"}, {6, "polling"}}, 2, []string{"reads-etcd", "polls"}},
		{"etcd only", []quiz.Mark{{4, "etcd-direct"}}, 1, []string{"reads-etcd"}},
		{"polling only", []quiz.Mark{{6, "polling"}}, 1, []string{"polls"}},
		{"Running is not Ready", []quiz.Mark{{5, "running-not-ready"}}, 1, []string{"not-ready"}},
		{"no timeout", []quiz.Mark{{3, "no-timeout"}}, 1, []string{"loops-forever"}},
		{"no timeout, on the sleep", []quiz.Mark{{6, "no-timeout"}}, 0, nil},
		{"line 3 holds two bugs", []quiz.Mark{{3, "polling"}, {3, "no-timeout"}}, 2, []string{"polls", "loops-forever"}},
		{"all four, line 3 twice", []quiz.Mark{{3, "polling"}, {3, "no-timeout"}, {4, "etcd-direct"}, {5, "running-not-ready"}}, 4, []string{"reads-etcd", "polls", "not-ready", "loops-forever"}},
		{"a right and a wrong reason on one line", []quiz.Mark{{4, "etcd-direct"}, {4, "wrong-key"}}, 0, []string{"reads-etcd"}},
		{"right line, wrong reason", []quiz.Mark{{4, "wrong-key"}, {6, "interval"}}, 0, nil},
		{"reasons swapped", []quiz.Mark{{4, "polling"}, {6, "etcd-direct"}}, 0, nil},
		{"none", nil, 0, nil},
		{"two and a wrong mark", []quiz.Mark{{4, "etcd-direct"}, {6, "polling"}, {2, "await-in-loop"}}, 1, []string{"reads-etcd", "polls"}},
		{"one and two wrong marks", []quiz.Mark{{4, "etcd-direct"}, {1, "wrong-key"}, {8, "interval"}}, 0, []string{"reads-etcd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := q.Grade([]quiz.Answer{{Question: qu.ID, Marks: tt.marks}})
			if err != nil {
				t.Fatal(err)
			}
			qr := r.Questions[0]
			if qr.ScoreGiven != tt.score || r.ScoreGiven != tt.score || r.ScoreMaximum != 4 || qr.Correct != (tt.score == 4) {
				t.Errorf("score %d/%d correct=%v, want %d/4", qr.ScoreGiven, r.ScoreMaximum, qr.Correct, tt.score)
			}
			var found []string
			for _, b := range qr.Bugs {
				if b.Found {
					found = append(found, b.Bug)
				}
			}
			if !slices.Equal(found, tt.found) {
				t.Errorf("found %v, want %v", found, tt.found)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	q := watchQuiz(t)
	spot, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	tests := []struct {
		name  string
		quiz  *quiz.Quiz
		ans   []quiz.Answer
		field string
		typ   string
	}{
		{"unknown question", q, []quiz.Answer{{Question: "nope", Choice: "x"}}, "answers[0].question", quiz.ProblemNotFound},
		{"no question", q, []quiz.Answer{{Choice: "protobuf"}}, "answers[0].question", quiz.ProblemRequired},
		{"unknown option", q, []quiz.Answer{{Question: "etcd-raw", Choice: "bogus"}}, "answers[0].choice", quiz.ProblemNotFound},
		{"option of another question", q, []quiz.Answer{{Question: "etcd-raw", Choice: "where-stored"}}, "answers[0].choice", quiz.ProblemNotFound},
		{"no option", q, []quiz.Answer{{Question: "etcd-raw"}}, "answers[0].choice", quiz.ProblemRequired},
		{"duplicate", q, []quiz.Answer{{Question: "etcd-raw", Choice: "protobuf"}, {Question: "etcd-raw", Choice: "encrypted-default"}}, "answers[1].question", quiz.ProblemDuplicate},
		{"marks on a choice", q, []quiz.Answer{{Question: "etcd-raw", Choice: "protobuf", Marks: []quiz.Mark{{1, "x"}}}}, "answers[0].marks", quiz.ProblemInvalid},
		{"line out of range", spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{9, "polling"}}}}, "answers[0].marks[0].line", quiz.ProblemInvalid},
		{"line zero", spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{0, "polling"}}}}, "answers[0].marks[0].line", quiz.ProblemInvalid},
		{"same mark twice", spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{4, "etcd-direct"}, {3, "polling"}, {4, "etcd-direct"}}}}, "answers[0].marks[2].line", quiz.ProblemDuplicate},
		{"unknown reason", spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{4, "slow"}}}}, "answers[0].marks[0].reason", quiz.ProblemNotFound},
		{"choice on spot-the-bug", spot, []quiz.Answer{{Question: "wait-for-pod-ready", Choice: "polling"}}, "answers[0].choice", quiz.ProblemInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.quiz.Grade(tt.ans)
			var inv *quiz.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want an InvalidError", err)
			}
			if !slices.ContainsFunc(inv.Problems, func(p quiz.Problem) bool { return p.Field == tt.field && p.Type == tt.typ }) {
				t.Errorf("problems %+v, want %s at %s", inv.Problems, tt.typ, tt.field)
			}
		})
	}
}

// TestViewHasNoAnswers: what a student sees before submitting holds no
// explanation and nothing that tells the right option from the others,
// not even the bank's option ids.
func TestViewHasNoAnswers(t *testing.T) {
	for _, q := range quiz.Lesson().Quizzes() {
		for _, lang := range []i18n.Lang{i18n.English, i18n.Thai} {
			v := q.View(q.NewAttempt("alice", "", time.Now()), lang)
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			for _, qu := range q.Questions {
				for _, secret := range []string{qu.Explanation.EN, qu.Explanation.TH} {
					if strings.Contains(s, secret) {
						t.Errorf("%s/%s: the view holds the explanation", q.ID, qu.ID)
					}
				}
				for _, o := range qu.Options {
					if strings.Contains(s, `"`+o.ID+`"`) {
						t.Errorf("%s/%s: the view names the bank's option %s", q.ID, qu.ID, o.ID)
					}
				}
				for _, bug := range qu.Bugs {
					if strings.Contains(s, bug.Explanation.In(lang)) || strings.Contains(s, `"`+bug.ID+`"`) {
						t.Errorf("%s/%s: the view names bug %s", q.ID, qu.ID, bug.ID)
					}
				}
			}
			for _, marker := range []string{"answer", "correct", "explanation", "bugs", "proof"} {
				if strings.Contains(strings.ToLower(s), `"`+marker) {
					t.Errorf("%s (%s): the view has a field %q: %s", q.ID, lang, marker, s)
				}
			}
		}
	}
}

func TestViewLanguage(t *testing.T) {
	q := watchQuiz(t)
	a := q.NewAttempt("alice", "", time.Now())
	th, en := q.View(a, i18n.Thai), q.View(a, i18n.English)
	if th.Questions[0].Prompt != q.Questions[0].Prompt.TH || en.Questions[0].Prompt != q.Questions[0].Prompt.EN {
		t.Errorf("prompts: %q / %q", th.Questions[0].Prompt, en.Questions[0].Prompt)
	}
	if i18n.Parse("th") != i18n.Thai || i18n.Parse("fr") != i18n.English || i18n.Parse("") != i18n.English {
		t.Error("ParseLang")
	}
}

func TestNewBankCatchesMistakes(t *testing.T) {
	bad := []*quiz.Quiz{
		{ID: "a", Questions: []quiz.Question{{ID: "q", Kind: quiz.Choice, Options: []quiz.Option{{ID: "x"}}, Answer: "y"}}},
		{ID: "a", Questions: []quiz.Question{{ID: "q", Kind: quiz.SpotTheBug, Snippet: "one line", Options: []quiz.Option{{ID: "r"}}, Bugs: []quiz.Bug{{ID: "b", Lines: []int{2}, Reason: "r"}}}}},
		{ID: "a", Questions: []quiz.Question{{ID: "q", Kind: quiz.Choice, Options: []quiz.Option{{ID: "x"}, {ID: "x"}}, Answer: "x"}}},
		{ID: "a", Questions: []quiz.Question{{ID: "q", Kind: "essay"}}},
	}
	for i, q := range bad {
		if _, err := quiz.NewBank(q); err == nil {
			t.Errorf("bank %d accepted", i)
		}
	}
	ok := &quiz.Quiz{ID: "a", Questions: []quiz.Question{{ID: "q", Kind: quiz.Choice, Options: []quiz.Option{{ID: "x"}}, Answer: "x"}}}
	if _, err := quiz.NewBank(ok, ok); err == nil {
		t.Error("two quizzes with one id accepted")
	}
}

// Every Text of the bank (titles, prompts, options, reasons,
// explanations, proofs) has both languages.
func TestBankIsTranslated(t *testing.T) {
	for _, m := range i18n.Untranslated(quiz.Lesson()) {
		t.Error(m)
	}
}
