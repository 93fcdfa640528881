package labhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// spaceQuota is the class's etcd quota in this test: small, so that a few
// dozen writes of a MiB fill it.
const spaceQuota = 48 << 20

// fillEtcd writes a MiB under key(i), i = 0, 1, ..., until etcd refuses a
// write with NOSPACE, and returns how many it wrote.
func fillEtcd(t *testing.T, c *clientv3.Client, key func(i int) string) int {
	t.Helper()
	return storagetest.FillUntilNoSpace(t, c, key, strings.Repeat("x", 1<<20))
}

func (u user) dashboard() labhttp.ClassView {
	u.t.Helper()
	resp, body := u.get(labhttp.APIPath + "/dashboard")
	var v labhttp.ClassView
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil {
		u.t.Fatalf("the dashboard's JSON: HTTP %d %s", resp.StatusCode, body)
	}
	return v
}

// TestRoomSaysEtcdIsFull: etcd's NOSPACE alarm stopped every write of a
// class until someone cleared it by hand, and nothing said so. Now
// kubelab compacts, defragments and disarms it, and while it cannot (live
// data fills the quota) the instructor's room says so, live, with what to
// do; a student's writes work again once there is room.
func TestRoomSaysEtcdIsFull(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.EtcdQuotaBackendBytes = spaceQuota })
	etcd := lab.EtcdClient()
	alice, teacher := student(t, lab, "alice"), instructor(t, lab)
	create := func(name string) error {
		_, stderr, err := alice.kubectl("create", "configmap", name, "-n", "alice")
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		return nil
	}

	// Her kubeconfig first: minting its token is a write too.
	if _, stderr, err := alice.kubectl("get", "configmaps", "-n", "alice"); err != nil {
		t.Fatalf("a student's kubectl: %v: %s", err, stderr)
	}

	// History: one key rewritten, as a replace loop does. The guard
	// reclaims it by itself, starting at the first refused write, and a
	// student's kubectl, told to try again after a few seconds, rides
	// out the recovery: its create goes through.
	rewrites := fillEtcd(t, etcd, func(int) string { return "/kubelab-test/rewritten" })
	full := time.Now()
	if err := create("while-full"); err != nil {
		t.Fatalf("a student's create while kubelab reclaims etcd's history: %v", err)
	}
	t.Logf("%d rewrites of a MiB filled etcd; a student's create sent then went through after %v, once kubelab compacted, defragmented and disarmed it",
		rewrites, time.Since(full).Round(100*time.Millisecond))
	// The write can pass between the disarm and the guard's record of it.
	eventually.Holds(t, "the dashboard's etcd after the reclaim", func() (bool, error) {
		e := teacher.dashboard().Etcd
		return e != nil && !e.Full && e.Recoveries == 1, nil
	})

	// Live data: distinct keys, which compaction cannot free. The room
	// says so, live, and what to do.
	ctx := browsertest.Start(t)
	browsertest.SignInToDashboard(t, ctx, lab.URL(), instructorToken)
	browsertest.WaitJS(t, ctx, "the class, live, with no notice", `document.querySelector(".dashboard .conn.live") !== null && document.querySelector("[data-etcd-full]") === null`)
	browsertest.Eval[bool](t, ctx, `(window.sameDashboard = true)`)
	// etcd counts its file, free pages and all, against the quota: the
	// first alarm can come with less live data than a defragmented file
	// needs to stay full. Then kubelab rightly disarms it, and more is
	// written.
	kept := 0
	eventually.HoldsWithin(t, time.Minute, "live data filling etcd, as kubelab finds it", func() (bool, error) {
		if e := teacher.dashboard().Etcd; e != nil && e.LiveDataFills {
			return true, nil
		}
		kept += fillEtcd(t, etcd, func(i int) string { return fmt.Sprintf("/kubelab-test/kept-%04d", kept+i) })
		return false, nil
	})
	t.Logf("%d distinct keys of a MiB filled etcd", kept)
	notice := `document.querySelector("[data-etcd-full]")`
	browsertest.WaitJS(t, ctx, "the notice, live", notice+`?.textContent.includes("out of space") && `+notice+`.textContent.includes("kubectl delete") && `+notice+`.textContent.includes("MiB of 48 MiB")`)
	if !browsertest.Eval[bool](t, ctx, `window.sameDashboard === true`) {
		t.Fatal("the dashboard reloaded")
	}
	browsertest.NoWiderThan(t, ctx, "the dashboard", 1280)
	browsertest.Shot(t, ctx, "room-etcd-full-en")
	// The student is told why, and what gives room back.
	if err := create("while-live-data-fills"); err == nil || !strings.Contains(err.Error(), "what the class stores fills its space quota") {
		t.Fatalf("a student's create while live data fills etcd: %v, want etcd's refusal in words", err)
	}
	e := teacher.dashboard().Etcd
	if e == nil || !e.Full || !e.LiveDataFills || e.InUse == 0 || e.Quota != spaceQuota {
		t.Fatalf("the dashboard's etcd with live data filling it: %+v", e)
	}
	recoveries := e.Recoveries // more than one if the fill was disarmed on the way
	browsertest.Do(t, ctx, "the dashboard in Thai, dark, on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(lab.URL()+"/labs/dashboard?lang=th"))
	browsertest.WaitJS(t, ctx, "the notice in Thai", `document.documentElement.lang === "th" && `+notice+`?.textContent.includes("etcd เต็มแล้ว")`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", window.sameDashboard = true)`)
	browsertest.NoWiderThan(t, ctx, "the dashboard", 390)
	browsertest.Shot(t, ctx, "room-etcd-full-th-dark-phone")

	// Deleting is allowed while etcd is full; once there is room, the
	// guard lets writes in again and the notice goes, live.
	// A delete is idempotent, so one that etcd timed out (its apply
	// held up on two loaded cores under the race detector) is sent again.
	eventually.HoldsWithin(t, time.Minute, "deleting while etcd is full", func() (bool, error) {
		_, err := etcd.Delete(context.Background(), "/kubelab-test/", clientv3.WithPrefix())
		if err != nil {
			t.Logf("deleting while etcd is full: %v; again", err)
		}
		return err == nil, nil
	})
	browsertest.WaitJS(t, ctx, "the notice gone, live", notice+` === null && window.sameDashboard === true`)
	if err := create("after-delete"); err != nil {
		t.Errorf("a student's create once the data is deleted: %v", err)
	}
	if e := teacher.dashboard().Etcd; e == nil || e.Full || e.Recoveries != recoveries+1 {
		t.Errorf("the dashboard's etcd after the delete: %+v, want %d recoveries", e, recoveries+1)
	}
}
