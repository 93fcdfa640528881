// Package kubecore checks kubelab --apiserver=kube: kube-apiserver's own
// code in kubelab's process, reached through kubelab's port with the real
// kubectl and client-go. It runs the kubelab binary, so that this test
// binary does not link k8s.io/kubernetes.
package kubecore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// TestMain removes the binary kubelabproc built.
func TestMain(m *testing.M) {
	code := m.Run()
	kubelabproc.RemoveBinary()
	os.Exit(code)
}

// startKubeCore runs kubelab --apiserver=kube on a fresh data dir.
func startKubeCore(t *testing.T) *kubelabproc.Server {
	t.Helper()
	// With the simulated node, which kubelabproc leaves out by default.
	s := kubelabproc.New(t, "kube", "--apiserver=kube", "--etcd-listen-client", kubelabproc.FreeAddr(t), "--simulated-node=true")
	s.Start(t)
	if err := s.Ready(t); err != nil {
		t.Fatalf("%v\n%s", err, s.Output())
	}
	return s
}

func kubectl(t *testing.T, s *kubelabproc.Server, args ...string) string {
	t.Helper()
	out, errOut, err := clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", filepath.Join(s.DataDir, "kubeconfig")}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func TestKubeCore(t *testing.T) {
	s := startKubeCore(t)
	ctx := t.Context()

	t.Run("VersionIsKubes", func(t *testing.T) {
		var v struct {
			ServerVersion struct{ GitVersion, Major, Minor string }
		}
		if err := json.Unmarshal([]byte(kubectl(t, s, "version", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if got := v.ServerVersion; got.GitVersion != "v1.37.2" || got.Major != "1" || got.Minor != "37" {
			t.Errorf("server version %+v, want v1.37.2 (1, 37)", got)
		}
	})

	t.Run("KubectlCreateGetWatch", func(t *testing.T) {
		kubectl(t, s, "create", "namespace", "core")
		kubectl(t, s, "-n", "core", "create", "configmap", "first", "--from-literal=lesson=watch")
		if got := kubectl(t, s, "-n", "core", "get", "configmap", "first", "-o", "jsonpath={.data.lesson}"); got != "watch" {
			t.Errorf("kubectl get: data.lesson %q, want watch", got)
		}
		lines := watchLines(t, s, "-n", "core", "get", "configmaps", "--watch", "-o", "name")
		lines.await(t, "configmap/first")
		kubectl(t, s, "-n", "core", "create", "configmap", "second")
		lines.await(t, "configmap/second")
	})

	t.Run("ControllersAndTheNodeRunADeployment", func(t *testing.T) {
		kubectl(t, s, "create", "namespace", "apps")
		// The service-account and root-CA controllers fill a new namespace.
		eventually.HoldsWithin(t, controlBound, "the default service account and kube-root-ca.crt in namespace apps", func() (bool, error) {
			if _, err := s.Client.CoreV1().ServiceAccounts("apps").Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return false, err
			}
			_, err := s.Client.CoreV1().ConfigMaps("apps").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, err
		})
		kubectl(t, s, "-n", "apps", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
		eventually.HoldsWithin(t, controlBound, "2 pods of deployment web Running on kubelab-node", func() (bool, error) {
			pods, err := s.Client.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "kubelab-node" {
					running++
				}
			}
			return running == 2, fmt.Errorf("%d of %d pods running", running, len(pods.Items))
		})
		if got := kubectl(t, s, "-n", "apps", "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"); got != "2" {
			t.Errorf("deployment web: %q replicas available, want 2", got)
		}
		// The namespace controller empties a namespace being deleted, and
		// the garbage collector's and the node's work lets it go.
		kubectl(t, s, "delete", "namespace", "apps", "--wait=false")
		eventually.HoldsWithin(t, controlBound, "namespace apps gone", func() (bool, error) {
			_, err := s.Client.CoreV1().Namespaces().Get(ctx, "apps", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	})

	t.Run("TheServiceAccountPluginMountsWhatTheLessonShows", func(t *testing.T) {
		kubectl(t, s, "create", "namespace", "sa")
		eventually.HoldsWithin(t, controlBound, "the default service account in namespace sa", func() (bool, error) {
			_, err := s.Client.CoreV1().ServiceAccounts("sa").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, err
		})
		kubectl(t, s, "-n", "sa", "run", "sa-demo", "--image=nginx:1.27")
		pod, err := s.Client.CoreV1().Pods("sa").Get(ctx, "sa-demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, lang := range i18n.Langs {
			checkServiceAccountPatch(t, lang, pod)
		}
	})

	t.Run("TheDiscoveryCapturesAreKubes", func(t *testing.T) {
		var apis struct{ Groups []struct{ Name string } }
		if err := json.Unmarshal([]byte(kubectl(t, s, "get", "--raw", "/apis")), &apis); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range apis.Groups {
			names = append(names, g.Name)
		}
		var openapi struct{ Paths map[string]json.RawMessage }
		if err := json.Unmarshal([]byte(kubectl(t, s, "get", "--raw", "/openapi/v3")), &openapi); err != nil {
			t.Fatal(err)
		}
		paths := slices.Sorted(maps.Keys(openapi.Paths))[:6]
		// As the page's jq prints them: the names a line each, the paths
		// as an indented JSON array.
		listed, _ := json.MarshalIndent(paths, "", "  ")
		for _, lang := range i18n.Langs {
			checkCapture(t, lang, "apis", strings.Join(names, "\n"))
			checkCapture(t, lang, "openapi", string(listed))
		}
	})

	t.Run("TheTraceOfACreateShowsKubesStages", func(t *testing.T) {
		kubectl(t, s, "create", "namespace", "traced")
		cm, err := s.Client.CoreV1().ConfigMaps("traced").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lesson"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/kubelab/v1/traces", nil)
		code, body := do(t, req)
		if code != http.StatusOK {
			t.Fatalf("GET /kubelab/v1/traces: %d\n%s", code, body)
		}
		var list struct {
			User   string
			Traces []struct {
				ID, User, Verb, Resource, Namespace, Name string
				Code                                      int
				Records                                   []struct{ Stage, Plugin, Decision, ResourceVersion string }
			}
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		for _, tr := range list.Traces {
			if tr.Verb != "create" || tr.Resource != "configmaps" || tr.Namespace != "traced" || tr.Name != "lesson" {
				continue
			}
			if tr.Code != http.StatusCreated || tr.User != "system:anonymous" {
				t.Errorf("the create's trace: code %d, user %q; want 201, system:anonymous", tr.Code, tr.User)
			}
			stages := map[string]bool{}
			plugins := map[string]bool{}
			written := ""
			for _, r := range tr.Records {
				stages[r.Stage+"/"+r.Decision] = true
				plugins[r.Plugin] = true
				if r.Stage == "storage" {
					written = r.ResourceVersion
				}
			}
			for _, want := range []string{"authentication/allow", "authorization/allow", "mutating-admission/allow", "validating-admission/allow", "storage/allow"} {
				if !stages[want] {
					t.Errorf("the create's trace has no %s record: %+v", want, tr.Records)
				}
			}
			// kube's own plugins, by kube's names.
			for _, want := range []string{"NamespaceLifecycle", "ValidatingAdmissionPolicy", "ResourceQuota"} {
				if !plugins[want] {
					t.Errorf("the create's trace has no record of admission plugin %s: %+v", want, tr.Records)
				}
			}
			if written != cm.ResourceVersion {
				t.Errorf("the trace's etcd write made resourceVersion %q, the config map has %q", written, cm.ResourceVersion)
			}
			return
		}
		t.Errorf("no trace of the config map's create among %d traces of %s", len(list.Traces), list.User)
	})

	t.Run("LocalUserIsAnonymousAndAdmin", func(t *testing.T) {
		if got := kubectl(t, s, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); got != "system:anonymous" {
			t.Errorf("kubectl auth whoami: %q, want system:anonymous (local mode, as kind)", got)
		}
		if got := strings.TrimSpace(kubectl(t, s, "auth", "can-i", "*", "*")); got != "yes" {
			t.Errorf("kubectl auth can-i '*' '*': %q, want yes", got)
		}
	})

	t.Run("FlowSchemasAreServed", func(t *testing.T) {
		schemas, err := s.Client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, fs := range schemas.Items {
			names = append(names, fs.Name)
		}
		// kube's mandatory and suggested configuration, made by its
		// priority-and-fairness post-start hook.
		for _, want := range []string{"exempt", "catch-all", "system-leader-election", "global-default"} {
			if !slices.Contains(names, want) {
				t.Errorf("FlowSchemas %v: no %s", names, want)
			}
		}
	})

	t.Run("KubelabsPagesSayNotYet", func(t *testing.T) {
		// The lesson's pages run on it (TestLessonOnKubeCore); the labs' do not yet.
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/labs", nil)
		req.Header.Set("Accept", "text/html")
		code, body := do(t, req)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "Not yet on the kube core") {
			t.Errorf("GET /labs from a browser: %d\n%s", code, body)
		}
		req, _ = http.NewRequestWithContext(ctx, "GET", s.URL()+"/kubelab/v1/labs", nil)
		code, body = do(t, req)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"ServiceUnavailable"`) || !strings.Contains(body, "not yet on the kube core") {
			t.Errorf("GET /kubelab/v1/labs: %d\n%s", code, body)
		}
	})

	t.Run("CrossOriginWritesAreRefused", func(t *testing.T) {
		// Any web page the local user opens may post to localhost; in local
		// mode, a request without credentials is cluster-admin.
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/api/v1/namespaces", strings.NewReader(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"from-a-page"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		if code, body := do(t, req); code != http.StatusForbidden {
			t.Errorf("cross-site POST: %d, want 403\n%s", code, body)
		}
		if _, err := s.Client.CoreV1().Namespaces().Get(ctx, "from-a-page", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the cross-site POST's namespace: %v, want NotFound", err)
		}
	})
}

// TestTheCoresDoNotShareAnEtcd: a data dir last served by one core is
// refused by the other, with a message that says what to do, and nothing
// of it is changed.
func TestTheCoresDoNotShareAnEtcd(t *testing.T) {
	for _, c := range []struct{ first, second string }{{"kubelab", "kube"}, {"kube", "kubelab"}} {
		t.Run(c.first+"Then"+c.second, func(t *testing.T) {
			s := kubelabproc.New(t, c.first, "--apiserver="+c.first, "--etcd-listen-client", kubelabproc.FreeAddr(t))
			s.Start(t)
			if err := s.Ready(t); err != nil {
				t.Fatalf("%v\n%s", err, s.Output())
			}
			if _, err := s.Client.CoreV1().Namespaces().Create(t.Context(), namespace("kept"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			s.Stop(t)

			s.Args = []string{"--apiserver=" + c.second, "--etcd-listen-client", kubelabproc.FreeAddr(t)}
			s.Start(t)
			err := s.Ready(t)
			if err == nil {
				t.Fatalf("--apiserver=%s started on the data of --apiserver=%s", c.second, c.first)
			}
			want := "last served by --apiserver=" + c.first + ", and --apiserver=" + c.second + " cannot share it"
			if out := s.Output(); !strings.Contains(out, want) {
				t.Errorf("the refusal says:\n%s\nwant it to say %q", out, want)
			}

			s.Args = []string{"--apiserver=" + c.first, "--etcd-listen-client", kubelabproc.FreeAddr(t)}
			s.Start(t)
			if err := s.Ready(t); err != nil {
				t.Fatalf("the first core again: %v\n%s", err, s.Output())
			}
			if _, err := s.Client.CoreV1().Namespaces().Get(t.Context(), "kept", metav1.GetOptions{}); err != nil {
				t.Errorf("after the refusal, the first core's namespace: %v", err)
			}
			s.Stop(t)
		})
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// controlBound is how long the controllers and the node may take to act:
// far more than they take (seconds), on a machine busy with other suites.
const controlBound = 90 * time.Second

// lines is what a running kubectl printed so far.
type lines struct {
	mu   sync.Mutex
	seen []string
	more chan struct{}
}

// watchLines runs kubectl with args until the test ends, collecting its
// output's lines.
func watchLines(t *testing.T, s *kubelabproc.Server, args ...string) *lines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, clitest.Kubectl(t), append([]string{"--kubeconfig", filepath.Join(s.DataDir, "kubeconfig")}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &lines{more: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.mu.Lock()
			l.seen = append(l.seen, sc.Text())
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cmd.Wait()
	})
	return l
}

// watchBound is how long a watch may take to print an event: far more than
// it takes, on a machine busy with the other suites.
const watchBound = 60 * time.Second

func (l *lines) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(watchBound)
	for {
		l.mu.Lock()
		found := slices.Contains(l.seen, want)
		seen := slices.Clone(l.seen)
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("kubectl --watch printed %q within %s, not %q", seen, watchBound, want)
		}
	}
}

// checkServiceAccountPatch holds the request path page's sample of what
// kube's ServiceAccount admission plugin adds to a Pod against pod, which
// kube made: the account, the kube-api-access-<random> volume and its
// mount, field for field, but for the random part of the volume's name.
func checkServiceAccountPatch(t *testing.T, lang i18n.Lang, pod *corev1.Pod) {
	t.Helper()
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	page, _ := lessons[lang].Page("request-path")
	var sample string
	for _, b := range page.Blocks {
		if b.Kind == web.Code && strings.Contains(b.Text, "kube-api-access-") {
			sample = b.Text
		}
	}
	var shown struct {
		Spec corev1.PodSpec `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(sample), &shown); err != nil || len(shown.Spec.Volumes) != 1 || len(shown.Spec.Containers) != 1 {
		t.Fatalf("%s: the page's sample of the ServiceAccount plugin's patch: %v\n%s", lang, err, sample)
	}
	var made []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			made = append(made, v)
		}
	}
	if len(made) != 1 || len(pod.Spec.Containers) != 1 {
		t.Fatalf("kube's pod has volumes %+v", pod.Spec.Volumes)
	}
	// The name's random part is kube's to pick.
	random := made[0].Name
	shown.Spec.Volumes[0].Name = random
	for i := range shown.Spec.Containers[0].VolumeMounts {
		shown.Spec.Containers[0].VolumeMounts[i].Name = random
	}
	if got, want := pod.Spec.ServiceAccountName, shown.Spec.ServiceAccountName; got != want {
		t.Errorf("%s: serviceAccountName %q, the page shows %q", lang, got, want)
	}
	if !apiequality.Semantic.DeepEqual(made, shown.Spec.Volumes) {
		t.Errorf("%s: kube's volume %+v, the page shows %+v", lang, made, shown.Spec.Volumes)
	}
	c := pod.Spec.Containers[0]
	if c.Name != shown.Spec.Containers[0].Name || !apiequality.Semantic.DeepEqual(c.VolumeMounts, shown.Spec.Containers[0].VolumeMounts) {
		t.Errorf("%s: kube's container %s mounts %+v, the page shows %s mounting %+v", lang, c.Name, c.VolumeMounts, shown.Spec.Containers[0].Name, shown.Spec.Containers[0].VolumeMounts)
	}
}

// checkCapture holds the recorded output of the extending page's command
// block id, which says it was captured from kubelab running kube-apiserver
// (--apiserver=kube), to what kube serves.
func checkCapture(t *testing.T, lang i18n.Lang, id, kube string) {
	t.Helper()
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	page, _ := lessons[lang].Page("extending")
	for _, b := range page.Blocks {
		if b.Kind == web.Command && b.ID == id {
			if b.Text != kube {
				t.Errorf("%s: the page's capture of %s:\n%s\nkube serves:\n%s", lang, b.Command, b.Text, kube)
			}
			return
		}
	}
	t.Errorf("%s: no command block %s on the extending page", lang, id)
}
