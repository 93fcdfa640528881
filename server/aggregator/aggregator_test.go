package aggregator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/metricsapi"
)

func kubectl(t *testing.T, lab *kubelabtest.Lab, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.RunWith(t, clitest.Options{Stdin: stdin}, clitest.Kubectl(t), append([]string{"--kubeconfig", lab.KubeconfigPath()}, args...)...)
}

func mustKubectl(t *testing.T, lab *kubelabtest.Lab, args ...string) string {
	t.Helper()
	out, stderr, err := kubectl(t, lab, "", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMetricsAPIService: kubelab registers v1beta1.metrics.k8s.io, backed
// by its own metrics server; kubectl sees it available, discovers its
// resource and reads live per-namespace figures through kubelab, which
// are not in etcd.
func TestMetricsAPIService(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	eventually(t, "metrics APIService available", func() string {
		out, _, _ := kubectl(t, lab, "", "get", "apiservices")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "v1beta1.metrics.k8s.io" && f[1] == "kube-system/kubelab-metrics" && f[2] == "True" {
				return ""
			}
		}
		return out
	})
	var list struct {
		GroupVersion string
		Resources    []struct{ Name, Kind string } `json:"resources"`
	}
	if err := json.Unmarshal([]byte(mustKubectl(t, lab, "get", "--raw", "/apis/metrics.k8s.io/v1beta1")), &list); err != nil {
		t.Fatal(err)
	}
	if list.GroupVersion != "metrics.k8s.io/v1beta1" || len(list.Resources) != 1 || list.Resources[0].Name != "namespacemetrics" {
		t.Fatalf("discovery through the aggregator: %+v", list)
	}
	if out := mustKubectl(t, lab, "api-resources", "--api-group", "metrics.k8s.io"); !strings.Contains(out, "NamespaceMetrics") {
		t.Fatalf("api-resources:\n%s", out)
	}

	// Requests in the namespace show up in the figures, with the pods.
	var pods int
	for range 3 {
		pods = len(strings.Fields(mustKubectl(t, lab, "get", "pods", "-n", "internals-demo", "-o", "name")))
	}
	eventually(t, "live figures", func() string {
		raw, stderr, err := kubectl(t, lab, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespacemetrics/internals-demo")
		if err != nil {
			return stderr
		}
		var m metricsapi.NamespaceMetrics
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return err.Error()
		}
		if pods == 0 || m.Objects["pods"] != pods || m.Requests.ByVerb["list"] < 3 {
			return raw
		}
		return ""
	})
	if out := mustKubectl(t, lab, "get", "namespacemetrics"); !strings.Contains(out, "internals-demo") || !strings.Contains(out, "REQUESTS") {
		t.Fatalf("kubectl get namespacemetrics:\n%s", out)
	}

	keys, _, err := clitest.Run(t, clitest.Etcdctl(t), "--endpoints", lab.EtcdURL, "get", "", "--prefix", "--keys-only")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Fields(keys) {
		if strings.Contains(k, "metrics") && k != "/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io" {
			t.Fatalf("metrics data in etcd: %s", k)
		}
	}
}

// TestProxyPassesIdentity: the backend hears who the user is from
// kubelab; a user kubelab refuses never reaches it.
func TestProxyPassesIdentity(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	kubeconfig, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	var adminToken string
	for _, u := range kubeconfig.AuthInfos {
		adminToken = u.Token
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Plain HTTP: client-go would not send the token, so set it here.
	get := func(token string) (int, http.Header) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, lab.URL()+"/apis/metrics.k8s.io/v1beta1/namespacemetrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	eventually(t, "admin served", func() string {
		code, h := get(adminToken)
		if code != http.StatusOK || h.Get(metricsapi.ServedForHeader) != "kubelab-admin" {
			return http.StatusText(code) + " for " + h.Get(metricsapi.ServedForHeader)
		}
		return ""
	})
	token, err := lab.Authenticator().Mint(ctx, pipeline.User{Name: "nobody", Groups: []string{pipeline.AllAuthenticated}})
	if err != nil {
		t.Fatal(err)
	}
	if code, h := get(token); code != http.StatusForbidden || h.Get(metricsapi.ServedForHeader) != "" {
		t.Fatalf("a user without rights: %d, served for %q", code, h.Get(metricsapi.ServedForHeader))
	}
}

// TestUnavailableAPIService: an APIService whose service does not exist
// is not Available, says why, and its group answers 503.
func TestUnavailableAPIService(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	svc := `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.nowhere.example.com
spec:
  group: nowhere.example.com
  version: v1
  service: {namespace: default, name: nothing}
  groupPriorityMinimum: 1000
  versionPriority: 15
`
	if _, stderr, err := kubectl(t, lab, svc, "create", "--validate=false", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	eventually(t, "Available False", func() string {
		out, _, _ := kubectl(t, lab, "", "get", "apiservice", "v1.nowhere.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}: {.status.conditions[?(@.type=="Available")].message}`)
		if out != `False ServiceNotFound: service/nothing in "default" is not present` {
			return out
		}
		return ""
	})
	_, stderr, err := kubectl(t, lab, "", "get", "--raw", "/apis/nowhere.example.com/v1")
	if err == nil || !strings.Contains(stderr, "ServiceUnavailable") {
		t.Fatalf("get through an unavailable APIService: %v\n%s", err, stderr)
	}
	if out := mustKubectl(t, lab, "get", "--raw", "/apis"); !strings.Contains(out, `"nowhere.example.com"`) {
		t.Fatalf("/apis lacks the group: %s", out)
	}

	// Handing a group kubelab serves itself is refused, nothing written.
	bad := strings.NewReplacer("v1.nowhere.example.com", "v1.rbac.authorization.k8s.io", "nowhere.example.com", "rbac.authorization.k8s.io").Replace(svc)
	if _, stderr, err := kubectl(t, lab, bad, "create", "--validate=false", "-f", "-"); err == nil || !strings.Contains(stderr, "spec.group: Invalid value") {
		t.Fatalf("APIService for a served group: %v\n%s", err, stderr)
	}
}
