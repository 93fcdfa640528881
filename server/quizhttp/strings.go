package quizhttp

import (
	"strconv"
	"strings"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web/i18n"
)

// ui is the pages' own wording, in each language.
type ui struct {
	Lang         i18n.Lang
	QuizzesTitle string
	Quizzes      string
	Submit       string
	YourScore    string
	YourAttempts string
	NoAttempts   string
	Correct      string
	Partly       string
	Incorrect    string
	NotAnswered  string
	YourAnswer   string
	RightAnswer  string
	Why          string
	SeeLive      string
	TryAgain     string
	Line         string
	// MarkLine is a format with the line's %d: the summary that opens a
	// line's reasons.
	MarkLine string
	// BugTally is a format with the bugs found's %d and all bugs' %d.
	BugTally   string
	YourMark   string
	BugFound   string
	BugMissed  string
	WrongMark  string
	Problems   string
	Back       string
	SignedInAs string
	NotGraded  string
	SignIn     string
	// NoAttemptsLeft is a format with the limit's %d.
	NoAttemptsLeft string
	// AttemptsLeft is a format with the number's %d.
	AttemptsLeft string
	// Closed is a format with the closing time's %s.
	Closed string
	// CloseQuiz, CloseWarning and CloseNow are the instructor's button
	// that closes a quiz, what it does, and the button that confirms it.
	CloseQuiz, CloseWarning, CloseNow string
	// NotRevealed says when the answers will show, by reveal policy.
	NotRevealed map[quiz.Reveal]string
	// Errors titles an error page by its HTTP status.
	Errors map[int]string
}

var uiText = i18n.Catalog[ui]{
	i18n.English: {
		Lang: "en", QuizzesTitle: "Quizzes: API Server and etcd Watch", Quizzes: "All quizzes",
		Submit: "Submit answers", YourScore: "Your score", YourAttempts: "Your attempts", NoAttempts: "Not attempted yet",
		Correct: "Correct", Partly: "Partly right", Incorrect: "Not right", NotAnswered: "Not answered",
		YourAnswer: "your answer", RightAnswer: "right answer", Why: "Why:", SeeLive: "Proof in the lesson",
		TryAgain: "Try again", Line: "Line", MarkLine: "Line %d is wrong because…", BugTally: "Bugs found: %d of %d", YourMark: "your mark",
		BugFound: "Found", BugMissed: "Missed", WrongMark: "not a bug, or not this reason",
		Problems: "What is wrong", Back: "Back", SignedInAs: "Signed in as",
		NotGraded:      "These answers could not be graded, and nothing was saved.",
		SignIn:         "Sign in to take a quiz: your session may have expired. Nothing was saved.",
		NoAttemptsLeft: "You have used all %d attempts at this quiz that your instructor allows.",
		AttemptsLeft:   "Attempts left: %d",
		Closed:         "This quiz closed on %s: it takes no more attempts, and your attempts show the right answers and why.",
		CloseQuiz:      "Close this quiz",
		CloseWarning:   "Every student's attempts then show the right answers and why, and nobody can take the quiz again. This cannot be undone.",
		CloseNow:       "Close it now",
		NotRevealed: map[quiz.Reveal]string{
			quiz.RevealAfterLastAttempt: "The right answers and why are shown once you have used your last attempt.",
			quiz.RevealAfterClose:       "The right answers and why are shown once your instructor closes the quiz.",
			quiz.RevealNever:            "Your instructor has chosen not to show the right answers.",
		},
		Errors: map[int]string{
			400: "The answers could not be read", 401: "Please sign in", 403: "Not allowed", 404: "Not found",
			409: "This cannot be submitted", 413: "Too much to submit", 422: "Some answers are not valid",
			429: "Too many submissions", 500: "Something went wrong",
		},
	},
	i18n.Thai: {
		Lang: "th", QuizzesTitle: "แบบทดสอบ: API Server and etcd Watch", Quizzes: "แบบทดสอบทั้งหมด",
		Submit: "ส่งคำตอบ", YourScore: "คะแนนของคุณ", YourAttempts: "การทำแบบทดสอบของคุณ", NoAttempts: "ยังไม่ได้ทำ",
		Correct: "ถูกต้อง", Partly: "ถูกบางส่วน", Incorrect: "ยังไม่ถูก", NotAnswered: "ไม่ได้ตอบ",
		YourAnswer: "คำตอบของคุณ", RightAnswer: "คำตอบที่ถูก", Why: "เพราะ:", SeeLive: "หลักฐานในบทเรียน",
		TryAgain: "ทำอีกครั้ง", Line: "บรรทัด", MarkLine: "บรรทัด %d ผิดเพราะ…", BugTally: "หา bug เจอ %d จาก %d ข้อ", YourMark: "ที่คุณทำเครื่องหมาย",
		BugFound: "หาเจอ", BugMissed: "พลาด", WrongMark: "ไม่ใช่ bug หรือเหตุผลไม่ตรง",
		Problems: "สิ่งที่ผิด", Back: "กลับ", SignedInAs: "เข้าสู่ระบบเป็น",
		NotGraded:      "ตรวจคำตอบชุดนี้ไม่ได้ และไม่มีอะไรถูกบันทึก",
		SignIn:         "เข้าสู่ระบบก่อนทำแบบทดสอบ: session ของคุณอาจหมดอายุแล้ว ไม่มีอะไรถูกบันทึก",
		NoAttemptsLeft: "คุณทำแบบทดสอบนี้ครบ %d ครั้งตามที่ผู้สอนกำหนดแล้ว",
		AttemptsLeft:   "ทำได้อีก %d ครั้ง",
		Closed:         "แบบทดสอบนี้ปิดแล้วเมื่อ %s: ทำเพิ่มไม่ได้อีก และการทำแบบทดสอบของคุณจะแสดงคำตอบที่ถูกพร้อมเหตุผล",
		CloseQuiz:      "ปิดแบบทดสอบนี้",
		CloseWarning:   "การทำแบบทดสอบของนักเรียนทุกคนจะแสดงคำตอบที่ถูกพร้อมเหตุผล และจะไม่มีใครทำแบบทดสอบนี้ได้อีก ย้อนกลับไม่ได้",
		CloseNow:       "ปิดเดี๋ยวนี้",
		NotRevealed: map[quiz.Reveal]string{
			quiz.RevealAfterLastAttempt: "คำตอบที่ถูกและเหตุผลจะแสดงหลังจากคุณทำครบทุกครั้งแล้ว",
			quiz.RevealAfterClose:       "คำตอบที่ถูกและเหตุผลจะแสดงเมื่อผู้สอนปิดแบบทดสอบ",
			quiz.RevealNever:            "ผู้สอนเลือกไม่แสดงคำตอบที่ถูก",
		},
		Errors: map[int]string{
			400: "อ่านคำตอบไม่ได้", 401: "กรุณาเข้าสู่ระบบ", 403: "ไม่ได้รับอนุญาต", 404: "ไม่พบ",
			409: "ส่งคำตอบนี้ไม่ได้", 413: "ข้อมูลที่ส่งมาใหญ่เกินไป", 422: "มีคำตอบที่ไม่ถูกต้องตามรูปแบบ",
			429: "ส่งคำตอบถี่เกินไป", 500: "เกิดข้อผิดพลาด",
		},
	},
}

func uiFor(lang i18n.Lang) ui { return uiText.In(lang) }

func (s ui) verdict(q quiz.ExplainedQuestion) string {
	switch {
	case !q.Answered:
		return s.NotAnswered
	case q.Correct:
		return s.Correct
	case q.ScoreGiven > 0:
		return s.Partly
	}
	return s.Incorrect
}

// outcome names how a score went, for its colour: right (full marks),
// partly, wrong, or unanswered.
func outcome(given, maximum int, answered bool) string {
	switch {
	case !answered:
		return "unanswered"
	case given == maximum && maximum > 0:
		return "right"
	case given > 0:
		return "partly"
	}
	return "wrong"
}

// verdictMark is the verdict as a sign, beside its words, so that right and
// wrong read at a glance in any language, and without colour.
func verdictMark(q quiz.ExplainedQuestion) string {
	switch outcome(q.ScoreGiven, q.ScoreMaximum, q.Answered) {
	case "right":
		return "✓"
	case "partly":
		return "◐"
	case "unanswered":
		return "–"
	}
	return "✗"
}

// optionClass colours a choice: the student's own, right or wrong (which
// the verdict already tells), and the right one they missed, where the
// reveal policy shows it.
func optionClass(q quiz.ExplainedQuestion, o quiz.ExplainedOption) string {
	switch {
	case o.Chosen && (o.Right || q.Correct):
		return "opt-right"
	case o.Chosen:
		return "opt-wrong"
	case o.Right:
		return "opt-missed"
	}
	return ""
}

// lineClass colours a line of spot-the-bug once revealed: marks that all
// found bugs, marks that found none, a mix, and a buggy line left unmarked.
// Before the reveal a marked line is only marked: its colour would say
// which bugs were found.
func lineClass(l quiz.ExplainedLine, revealed bool) string {
	right := 0
	for _, m := range l.Marks {
		if m.Right {
			right++
		}
	}
	switch {
	case len(l.Marks) == 0 && l.Buggy:
		return "mark-missed"
	case len(l.Marks) == 0:
		return ""
	case !revealed:
		return "marked"
	case right == len(l.Marks):
		return "mark-right"
	case right == 0:
		return "mark-wrong"
	}
	return "mark-partly"
}

// lines lists line numbers for a person: "3, 6".
func lines(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}
