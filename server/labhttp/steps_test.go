package labhttp_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server/labhttp"
)

// The watch lab done with the real kubectl: a watch, a label, and the
// MODIFIED the server sent on that watch. Nothing is passed for a
// command that changes nothing.
func TestWatchLabWithKubectl(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice")
	if v := alice.start("watch"); v.Steps[0].State != labhttp.StateCurrent || v.Namespace != alice.name {
		t.Fatalf("started: %+v", v)
	}
	// A list is not a watch.
	if _, stderr, err := alice.kubectl("-n", alice.name, "get", "pods"); err != nil {
		t.Fatal(err, stderr)
	}
	alice.post(labhttp.APIPath+"/watch/check", "")
	if s := alice.state("watch", "watch-pods"); s != labhttp.StateCurrent {
		t.Fatalf("a list passed the watch step: %s", s)
	}
	// The label the next steps will set, set already.
	if _, stderr, err := alice.kubectl("-n", alice.name, "label", "pod", "ssa-demo", "demo-round=one", "--overwrite"); err != nil {
		t.Fatal(err, stderr)
	}
	alice.kubectlBackground("-n", alice.name, "get", "pods", "--watch", "--output-watch-events")
	alice.waitPassed("watch", "watch-pods")
	// Reading is not changing.
	if _, stderr, err := alice.kubectl("-n", alice.name, "get", "pod", "ssa-demo", "-o", "yaml"); err != nil {
		t.Fatal(err, stderr)
	}
	alice.post(labhttp.APIPath+"/watch/check", "")
	if s := alice.state("watch", "modify"); s != labhttp.StateCurrent {
		t.Fatalf("a read passed the MODIFIED step: %s", s)
	}
	// The same value again changes nothing stored: the step says so.
	// (kubectl label sees that itself, says "not labeled" and sends
	// nothing; kubectl patch sends it, and the server stores nothing.)
	if _, stderr, err := alice.kubectl("-n", alice.name, "patch", "pod", "ssa-demo", "--type=merge", "-p", `{"metadata":{"labels":{"demo-round":"one"}}}`); err != nil {
		t.Fatal(err, stderr)
	}
	var why string
	eventually.Holds(t, "why the label did not count", func() (bool, error) {
		st := alice.view("watch").Steps[1]
		why = st.Why
		return st.State == labhttp.StateCurrent && strings.Contains(why, "changed nothing stored"), nil
	})
	if !strings.Contains(why, "pods/ssa-demo") {
		t.Errorf("why %q", why)
	}
	if _, stderr, err := alice.kubectl("-n", alice.name, "label", "pod", "ssa-demo", "demo-round=two", "--overwrite"); err != nil {
		t.Fatal(err, stderr)
	}
	if st := alice.waitPassed("watch", "modify"); !strings.Contains(st.Evidence, "ssa-demo") {
		t.Errorf("evidence %q", st.Evidence)
	}
	if st := alice.waitPassed("watch", "see-modified"); !strings.Contains(st.Evidence, "MODIFIED") {
		t.Errorf("evidence %q", st.Evidence)
	}
	if v := alice.view("watch"); !v.Done {
		t.Errorf("lab not done: %+v", v)
	}
	// Another student's view is their own.
	bob := student(t, lab, "bob")
	if v := bob.view("watch"); v.Started {
		t.Errorf("bob sees alice's progress: %+v", v)
	}
}

// The pipeline lab with kubectl: admission's patch and RBAC's denial are
// read from the traces of alice's own requests.
func TestPipelineLabWithKubectl(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice")
	alice.start("pipeline")
	if _, stderr, err := alice.kubectl("-n", alice.name, "get", "pods"); err != nil {
		t.Fatal(err, stderr)
	}
	if _, stderr, err := alice.kubectl("-n", alice.name, "run", "lab-pod", "--image=nginx:1.27"); err != nil {
		t.Fatal(err, stderr)
	}
	if st := alice.waitPassed("pipeline", "mutate"); !strings.Contains(st.Evidence, "ServiceAccount") {
		t.Errorf("evidence %q", st.Evidence)
	}
	if s := alice.state("pipeline", "deny"); s != labhttp.StateCurrent {
		t.Fatalf("deny: %s before any denial", s)
	}
	if _, stderr, err := alice.kubectl("-n", "kube-system", "get", "pods"); err == nil || !strings.Contains(stderr, "forbidden") {
		t.Fatalf("kube-system was not forbidden: %v %s", err, stderr)
	}
	if st := alice.waitPassed("pipeline", "deny"); !strings.Contains(st.Evidence, "403") {
		t.Errorf("evidence %q", st.Evidence)
	}
}

// The same lab done from the browser: the lesson's own "Run it live"
// websockets, with the session cookie, and the labs' JSON API.
func TestWatchLabInTheBrowser(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice").inBrowser()
	alice.start("watch")
	watch := alice.dial("/ui/ws/run?cmd=watch-pods")
	defer watch.Close(websocket.StatusNormalClosure, "")
	alice.waitPassed("watch", "watch-pods")
	label := alice.dial("/ui/ws/run?cmd=label-pod&value=from-the-page")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, b, err := label.Read(ctx)
		if err != nil {
			t.Fatalf("run label-pod: %v", err)
		}
		if strings.Contains(string(b), `"t":"end"`) {
			break
		}
	}
	alice.waitPassed("watch", "modify")
	alice.waitPassed("watch", "see-modified")
}

// Question steps are graded on the server; a wrong answer does not pass,
// an answer to a step that is not current is a Conflict, bad input a
// clear Status.
func TestQuestionSteps(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice")
	alice.start("etcd")
	path := labhttp.APIPath + "/etcd/steps/prefix/answer"
	resp, body := alice.post(path, `{"answer":"k8s"}`)
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")
	// The inspector is the browser's: it reads etcd with the page's session.
	if resp, body := alice.inBrowser().get("/ui/etcd/value?key=/registry/pods/" + alice.name + "/ssa-demo"); resp.StatusCode != http.StatusOK {
		t.Fatalf("inspector: HTTP %d: %s", resp.StatusCode, body)
	}
	alice.waitPassed("etcd", "read-key")
	if resp, body := alice.post(path, `{"answer":"json"}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"correct":false`) {
		t.Fatalf("wrong answer: HTTP %d %s", resp.StatusCode, body)
	}
	if resp, body := alice.post(path, `{"answer":"k8s\\x00"}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"correct":true`) {
		t.Fatalf("right answer: HTTP %d %s", resp.StatusCode, body)
	}
	// The mod revision of alice's own pod, as the inspector showed it;
	// bob's is wrong for her.
	bob := student(t, lab, "bob")
	modRevision := func(u user) string {
		_, body := u.inBrowser().get("/ui/etcd/value?key=/registry/pods/" + u.name + "/ssa-demo")
		m := regexp.MustCompile(`"modRevision":(\d+)`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no modRevision in %s", body)
		}
		return m[1]
	}
	if _, stderr, err := bob.kubectl("-n", bob.name, "label", "pod", "ssa-demo", "by=bob"); err != nil {
		t.Fatal(err, stderr)
	}
	revPath := labhttp.APIPath + "/etcd/steps/mod-revision/answer"
	if _, body := alice.post(revPath, `{"answer":"`+modRevision(bob)+`"}`); !strings.Contains(body, `"correct":false`) {
		t.Fatalf("bob's mod revision was right for alice: %s", body)
	}
	if _, body := alice.post(revPath, `{"answer":"`+modRevision(alice)+`"}`); !strings.Contains(body, `"correct":true`) {
		t.Fatalf("alice's own mod revision was wrong: %s", body)
	}
	resp, body = alice.post(labhttp.APIPath+"/etcd/steps/why-not/answer", `{"answer":`)
	wantStatus(t, resp, body, http.StatusBadRequest, "BadRequest")
	resp, body = alice.post(labhttp.APIPath+"/etcd/steps/why-not/answer", `{"answer":"skips","extra":1}`)
	wantStatus(t, resp, body, http.StatusBadRequest, "BadRequest")
	resp, body = alice.post(labhttp.APIPath+"/nope/start", ``)
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	resp, body = alice.post(labhttp.APIPath+"/etcd/steps/nope/answer", `{"answer":"x"}`)
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	resp, body = alice.post(labhttp.APIPath+"/etcd/steps/why-not/answer", `{"answer":"`+strings.Repeat("x", 8<<10)+`"}`)
	wantStatus(t, resp, body, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge")
	anon := user{t: t, lab: lab}
	resp, body = anon.post(labhttp.APIPath+"/etcd/start", "")
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
}

// An admin is denied nothing; `kubectl --as` serves their request as a
// user without bindings, and the denial counts for the admin who sent it.
func TestPipelineLabDenialByImpersonation(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	admin := mint(t, lab, "teacher", "system:masters")
	admin.start("pipeline")
	if _, stderr, err := admin.kubectl("-n", "internals-demo", "get", "pods"); err != nil {
		t.Fatal(err, stderr)
	}
	if _, stderr, err := admin.kubectl("-n", "internals-demo", "run", "lab-pod", "--image=nginx:1.27"); err != nil {
		t.Fatal(err, stderr)
	}
	admin.waitPassed("pipeline", "mutate")
	if s := admin.state("pipeline", "deny"); s != labhttp.StateCurrent {
		t.Fatalf("deny: %s before any denial", s)
	}
	if _, stderr, err := admin.kubectl("--as=nobody", "-n", "internals-demo", "get", "pods"); err == nil || !strings.Contains(stderr, `User "nobody" cannot list`) {
		t.Fatalf("as nobody: %v %s", err, stderr)
	}
	if st := admin.waitPassed("pipeline", "deny"); !strings.Contains(st.Evidence, "403") {
		t.Errorf("evidence %q", st.Evidence)
	}
}

// Doing a lab again through the API: a lab finished stays on record, its
// steps start over and count only what comes after; a lab not started, or
// not served, is a clear Status.
func TestDoItAgain(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice")
	resp, body := alice.post(labhttp.APIPath+"/discovery/restart", "")
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")
	resp, body = alice.post(labhttp.APIPath+"/nope/restart", "")
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	alice.start("discovery")
	for _, args := range [][]string{{"get", "--raw", "/apis"}, {"explain", "pod.spec.containers.image"}} {
		if _, stderr, err := alice.kubectl(args...); err != nil {
			t.Fatal(err, stderr)
		}
	}
	alice.waitPassed("discovery", "openapi")
	resp, body = alice.post(labhttp.APIPath+"/discovery/restart", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("restart: HTTP %d: %s", resp.StatusCode, body)
	}
	v := alice.view("discovery")
	if v.Done || v.Runs != 1 || v.Steps[0].State != labhttp.StateCurrent || v.Steps[1].State != labhttp.StateTodo {
		t.Fatalf("after doing it again: %+v", v)
	}
	// The old requests do not pass the new round.
	alice.post(labhttp.APIPath+"/discovery/check", "")
	if s := alice.state("discovery", "groups"); s != labhttp.StateCurrent {
		t.Fatalf("the first round's request passed the second: %s", s)
	}
	resp, body = alice.get(labhttp.APIPath)
	if !strings.Contains(body, `"id":"discovery"`) || !strings.Contains(body, `"runs":1`) {
		t.Errorf("the list of labs: HTTP %d: %s", resp.StatusCode, body)
	}
	// The instructor's dashboard counts the lab finished.
	if _, body := instructor(t, lab).get(labhttp.APIPath + "/dashboard"); !strings.Contains(body, `"labsDone":1`) {
		t.Errorf("dashboard: %s", body)
	}
	anon := user{t: t, lab: lab}
	resp, body = anon.post(labhttp.APIPath+"/discovery/restart", "")
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
}
