package quizhttp

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/labs"
)

// RosterEntry is one student of the class, for a gradebook: who, since
// when, their quizzes (first, last and best attempt of each) and how far
// they got in each lab. A student who joined and did nothing is listed
// too: absent is a grade as well.
type RosterEntry struct {
	Student     string    `json:"student"`
	DisplayName string    `json:"displayName,omitempty"`
	Class       string    `json:"class,omitempty"`
	Joined      string    `json:"joined,omitempty"`
	Quizzes     []Summary `json:"quizzes"`
	Labs        []LabMark `json:"labs"`
}

// LabMark is how far a student got in one lab: steps passed of all, when
// the last was passed, and when the lab was first finished.
type LabMark struct {
	Lab       string `json:"lab"`
	Number    int    `json:"number"`
	StepsDone int    `json:"stepsDone"`
	Steps     int    `json:"steps"`
	// LastStep is when the last step was passed; empty before any.
	LastStep string `json:"lastStep,omitempty"`
	// Finished is when the lab was first finished; empty until it is.
	Finished string `json:"finished,omitempty"`
}

// Roster is the answer to GET roster.
type Roster struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Items      []RosterEntry `json:"items"`
}

// roster gathers every student of the request's ?class=: those who joined,
// and those who only have attempts or lab progress (local mode has no
// sign-ins), in order of user name.
func (h *handlers) roster(c echo.Context) (Roster, error) {
	f, attempts, names, err := h.attemptsOf(c)
	if err != nil {
		return Roster{}, err
	}
	ctx := c.Request().Context()
	joined, progress, err := h.studentsAndProgress(ctx)
	if err != nil {
		return Roster{}, err
	}
	entries := map[string]*RosterEntry{}
	entry := func(student, class string) *RosterEntry {
		e, ok := entries[student]
		if !ok {
			e = &RosterEntry{Student: student, DisplayName: names[student], Class: class, Quizzes: []Summary{}, Labs: []LabMark{}}
			entries[student] = e
		}
		return e
	}
	inClass := func(class string) bool { return f.Class == "" || class == f.Class }
	for _, st := range joined {
		if inClass(st.Class) {
			entry(st.Name, st.Class).Joined = timestamp(st.Joined)
		}
	}
	for _, s := range summarize(attempts, names) {
		e := entry(s.Student, s.Class)
		e.Quizzes = append(e.Quizzes, s)
	}
	all := labs.All()
	for _, p := range progress {
		if !inClass(p.Class) {
			continue
		}
		e := entry(p.User, p.Class)
		for i, l := range all {
			if lp := p.Labs[l.ID]; lp != nil {
				e.Labs = append(e.Labs, markOf(l, i+1, lp))
			}
		}
	}
	out := Roster{APIVersion: APIVersion, Kind: "StudentRoster", Items: []RosterEntry{}}
	for _, e := range entries {
		if f.Student == "" || e.Student == f.Student {
			out.Items = append(out.Items, *e)
		}
	}
	slices.SortFunc(out.Items, func(a, b RosterEntry) int { return strings.Compare(a.Student, b.Student) })
	return out, nil
}

// studentsAndProgress reads who joined and everyone's lab progress, where
// kubelab keeps them.
func (h *handlers) studentsAndProgress(ctx context.Context) ([]classroom.Student, []*labs.Progress, error) {
	var joined []classroom.Student
	var progress []*labs.Progress
	var err error
	if h.students != nil {
		if joined, err = h.students(ctx); err != nil {
			return nil, nil, err
		}
	}
	if h.progress != nil {
		if progress, err = h.progress(ctx); err != nil {
			return nil, nil, err
		}
	}
	return joined, progress, nil
}

// markOf is how far lp got in l, the number-th lab.
func markOf(l *labs.Lab, number int, lp *labs.LabProgress) LabMark {
	m := LabMark{Lab: l.ID, Number: number, StepsDone: min(lp.Step, len(l.Steps)), Steps: len(l.Steps)}
	var last time.Time
	for _, p := range lp.Passed {
		if p.At.After(last) {
			last = p.At
		}
	}
	if !last.IsZero() {
		m.LastStep = timestamp(last)
	}
	if len(lp.Runs) > 0 {
		m.Finished = timestamp(lp.Runs[0].Finished)
	} else if lp.Done(l) && !last.IsZero() {
		m.Finished = timestamp(last)
	}
	if m.Finished != "" {
		// A lab finished before and being done again counts as done.
		m.StepsDone = len(l.Steps)
	}
	return m
}

func (h *handlers) rosterJSON(c echo.Context) error {
	r, err := h.roster(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// rosterCSV writes the roster for a gradebook: one row per student, with
// each quiz's attempts and first, last and best score, and each lab's
// steps passed and when it was finished, every quiz and lab a column
// whether or not anyone took it, so that each export has the same shape.
func (h *handlers) rosterCSV(c echo.Context) error {
	r, err := h.roster(c)
	if err != nil {
		return err
	}
	header := []string{"student", "displayName", "class", "joined"}
	quizzes := h.bank.Quizzes()
	for _, q := range quizzes {
		for _, col := range []string{"attempts", "first", "last", "best", "maximum"} {
			header = append(header, q.ID+"/"+col)
		}
	}
	all := labs.All()
	for i, l := range all {
		header = append(header, fmt.Sprintf("lab%d-%s/steps", i+1, l.ID), fmt.Sprintf("lab%d-%s/finished", i+1, l.ID))
	}
	w, err := h.csvWriter(c, "roster")
	if err != nil {
		return err
	}
	w.Write(header)
	for _, e := range r.Items {
		row := []string{cell(e.Student), cell(e.DisplayName), cell(e.Class), e.Joined}
		for _, q := range quizzes {
			i := slices.IndexFunc(e.Quizzes, func(s Summary) bool { return s.Quiz == q.ID })
			if i < 0 {
				row = append(row, "0", "", "", "", strconv.Itoa(q.Max()))
				continue
			}
			s := e.Quizzes[i]
			row = append(row, strconv.Itoa(s.Attempts), strconv.Itoa(s.First.ScoreGiven), strconv.Itoa(s.Last.ScoreGiven), strconv.Itoa(s.Best.ScoreGiven), strconv.Itoa(s.Best.ScoreMaximum))
		}
		for _, l := range all {
			i := slices.IndexFunc(e.Labs, func(m LabMark) bool { return m.Lab == l.ID })
			if i < 0 {
				row = append(row, "0", "")
				continue
			}
			row = append(row, strconv.Itoa(e.Labs[i].StepsDone), e.Labs[i].Finished)
		}
		w.Write(row)
	}
	w.Flush()
	return w.Error()
}

// csvWriter starts a CSV download named for what it holds and when.
func (h *handlers) csvWriter(c echo.Context, what string) (*csv.Writer, error) {
	resp := c.Response()
	resp.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	resp.Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s-%s.csv"`, what, h.now().UTC().Format("20060102-150405")))
	resp.WriteHeader(http.StatusOK)
	// A byte-order mark: without it, Excel reads UTF-8 as the system's
	// code page, and "สมชาย ใจดี" opens as mojibake.
	if _, err := resp.Write([]byte("\ufeff")); err != nil {
		return nil, err
	}
	return csv.NewWriter(resp), nil
}
