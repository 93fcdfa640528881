package labhttp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/labs"
	labstore "github.com/kubelab/kubelab/labs/etcdstore"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

// TestRoomListsWhoNeedsHelpFirst: the room was sorted by user name, so a
// stuck student sat on row 20 of 28, and Thai names filed under
// "student-N"; a student who joined long ago and never started a lab was
// not flagged. Now each row has its state (the summary's counts), the
// stuck come first, then those idle since joining, then the rest by
// display name as a reader orders names ("émile" before "Zed", though
// its bytes are larger).
func TestRoomListsWhoNeedsHelpFirst(t *testing.T) {
	t.Parallel()
	lab := classOfSeven(t)
	v := instructor(t, lab).dashboard()
	var order []string
	state := map[string]string{}
	for _, r := range v.Students {
		order = append(order, r.DisplayName)
		state[r.DisplayName] = string(r.State)
		if r.Idle != (r.DisplayName == "Yuki") {
			t.Errorf("%s idle: %v", r.DisplayName, r.Idle)
		}
	}
	want := []string{"Xavier", "Yuki", "Ann", "Bea", "émile", "Zed", "สมชาย ใจดี"}
	if !slices.Equal(order, want) {
		t.Errorf("the room's order: %q, want %q", order, want)
	}
	wantState := map[string]labhttp.RowState{"Xavier": labhttp.StateStuck, "Yuki": labhttp.StateNotStarted, "Ann": labhttp.StateNotStarted,
		"Bea": labhttp.StateDone, "émile": labhttp.StateWorking, "Zed": labhttp.StateWorking, "สมชาย ใจดี": labhttp.StateWorking}
	for name, st := range wantState {
		if state[name] != string(st) {
			t.Errorf("%s's state: %q, want %q", name, state[name], st)
		}
	}
}

// classOfSeven is a class of seven, one of each kind the room tells
// apart: Xavier stuck (no progress for 2 h, with --stuck-after 1h), Yuki
// idle (joined 2 h ago, no lab started), Ann just joined, Bea done with
// every lab, and three working: Zed, émile and สมชาย ใจดี.
func classOfSeven(t *testing.T) *kubelabtest.Lab {
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.StuckAfter = time.Hour })
	ctx := context.Background()
	progress := labstore.New(lab.EtcdClient())
	all := labs.All()
	now := time.Now()
	// at puts a student's progress as of updated: on the first lab's
	// second step, or with every lab done.
	at := func(u user, updated time.Time, done bool) {
		p := labs.NewProgress(u.name, "", u.name)
		for i, l := range all {
			if done || i == 0 {
				p.Labs[l.ID] = &labs.LabProgress{Started: updated, Step: 1, StepStarted: updated}
				if done {
					p.Labs[l.ID].Step = len(l.Steps)
				}
				p.Current = l.ID
			}
		}
		p.Updated = updated
		if err := progress.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// joinedAgo moves a student's sign-in d into the past.
	joinedAgo := func(u user, d time.Duration) {
		key := classroom.StudentPrefix + u.name
		resp, err := lab.EtcdClient().Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s's record: %v", u.name, err)
		}
		var st classroom.Student
		if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
			t.Fatal(err)
		}
		st.Joined = st.Joined.Add(-d)
		b, _ := json.Marshal(st)
		if _, err := lab.EtcdClient().Put(ctx, key, string(b)); err != nil {
			t.Fatal(err)
		}
	}

	zed, emile, idle := student(t, lab, "Zed"), student(t, lab, "émile"), student(t, lab, "Yuki")
	student(t, lab, "Ann") // joined just now, and has not started: not idle yet
	stuck, done, thai := student(t, lab, "Xavier"), student(t, lab, "Bea"), student(t, lab, "สมชาย ใจดี")
	at(zed, now, false)
	at(emile, now, false)
	at(thai, now, false)
	at(stuck, now.Add(-2*time.Hour), false)
	at(done, now.Add(-2*time.Hour), true)
	joinedAgo(idle, 2*time.Hour)

	return lab
}
