package aggregator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/aggregator"
	"github.com/kubelab/kubelab/server/crd"
	"github.com/kubelab/kubelab/server/metricsapi"
	"github.com/kubelab/kubelab/server/openapi"
)

// served is a kubelab the tests send requests to: the API with the
// aggregator on it (startAggregated), behind the front door for what
// needs the request pipeline.
type served interface {
	KubeconfigPath() string
}

// startAggregated serves the API alone with kubelab's aggregator and
// metrics server started on it as the server starts them, and the CRD
// controller, whose group versions the aggregator registers. The metrics
// server's request figures come from the front door's traces, if options
// put the API behind it (apitest.Config.Pipeline); nothing feeds them
// otherwise.
func startAggregated(t *testing.T, options ...func(*apitest.Config)) *apitest.Server {
	t.Helper()
	crds := crd.New()
	s := apitest.Start(t, append(options, func(c *apitest.Config) {
		c.Resources = crds.Resources()
		c.OpenAPI = []openapi.Resource{aggregator.APIServicesOpenAPI}
	})...)
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	var traces metricsapi.Traces // nil, not a nil bus: no figures
	if door := s.FrontDoor(); door != nil {
		traces = door.Traces
	}
	agg, metrics, err := aggregator.StartWithMetrics(aggregator.Config{API: s.API(), Docs: s.Docs(), Logger: logger}, s.EtcdClient(), traces)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { metrics.Stop(context.Background()) })
	t.Cleanup(agg.Stop)
	if err := crds.Start(crd.Config{API: s.API(), Docs: s.Docs(), Logger: logger}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(crds.Stop)
	// What the server's readiness waits for: the built-in group versions
	// registered and available, the backends' documents fetched.
	eventually(t, "the aggregator ready", func() string {
		if pending := agg.AutoregisterPending(); len(pending) > 0 || !agg.OpenAPISynced() || !crds.Synced() {
			return fmt.Sprintf("pending %v, documents fetched %v, CRDs synced %v", pending, agg.OpenAPISynced(), crds.Synced())
		}
		return ""
	})
	return s
}

func kubectl(t *testing.T, lab served, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.RunWith(t, clitest.Options{Stdin: stdin}, clitest.Kubectl(t), append([]string{"--kubeconfig", lab.KubeconfigPath()}, args...)...)
}

func mustKubectl(t *testing.T, lab served, args ...string) string {
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
// resource and reads live per-namespace object counts through kubelab,
// which are not in etcd.
func TestMetricsAPIService(t *testing.T) {
	t.Parallel()
	lab := startAggregated(t)
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

	pods := len(strings.Fields(mustKubectl(t, lab, "get", "pods", "-n", "internals-demo", "-o", "name")))
	eventually(t, "live object counts", func() string {
		m, msg := namespaceMetrics(t, lab, "internals-demo")
		if msg != "" {
			return msg
		}
		if pods == 0 || m.Objects["pods"] != pods {
			return fmt.Sprintf("%d pods counted, %d listed", m.Objects["pods"], pods)
		}
		return ""
	})
	if out := mustKubectl(t, lab, "get", "namespacemetrics"); !strings.Contains(out, "internals-demo") || !strings.Contains(out, "REQUESTS") {
		t.Fatalf("kubectl get namespacemetrics:\n%s", out)
	}

	keys, _, err := clitest.Run(t, clitest.Etcdctl(t), "--endpoints", lab.EtcdURL(), "get", "", "--prefix", "--keys-only")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Fields(keys) {
		if strings.Contains(k, "metrics") && k != "/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io" {
			t.Fatalf("metrics data in etcd: %s", k)
		}
	}
}

// namespaceMetrics reads a namespace's figures through kubelab; msg says
// why not when it could not.
func namespaceMetrics(t *testing.T, lab served, namespace string) (m metricsapi.NamespaceMetrics, msg string) {
	t.Helper()
	raw, stderr, err := kubectl(t, lab, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespacemetrics/"+namespace)
	if err != nil {
		return m, stderr
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return m, err.Error()
	}
	return m, ""
}

// TestMetricsBehindThePipeline: the metrics server learns from kubelab's
// request pipeline who the user is (one kubelab refuses never reaches it)
// and what requests a namespace got. Behind the front door, which
// authenticates, authorizes and traces.
func TestMetricsBehindThePipeline(t *testing.T) {
	t.Parallel()
	lab := startAggregated(t, func(c *apitest.Config) { c.Pipeline = true })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An admin as the admin kubeconfig's: in system:masters.
	adminToken, err := lab.FrontDoor().Authn.Mint(ctx, pipeline.User{Name: "kubelab-admin", Groups: []string{pipeline.SystemPrivilegedGroup}})
	if err != nil {
		t.Fatal(err)
	}
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
	token, err := lab.FrontDoor().Authn.Mint(ctx, pipeline.User{Name: "nobody", Groups: []string{pipeline.AllAuthenticated}})
	if err != nil {
		t.Fatal(err)
	}
	if code, h := get(token); code != http.StatusForbidden || h.Get(metricsapi.ServedForHeader) != "" {
		t.Fatalf("a user without rights: %d, served for %q", code, h.Get(metricsapi.ServedForHeader))
	}

	// Requests in the namespace show up in the figures.
	for range 3 {
		mustKubectl(t, lab, "get", "pods", "-n", "internals-demo", "-o", "name")
	}
	eventually(t, "live request figures", func() string {
		m, msg := namespaceMetrics(t, lab, "internals-demo")
		if msg != "" {
			return msg
		}
		if m.Requests.ByVerb["list"] < 3 {
			return fmt.Sprintf("%d lists counted, 3 made", m.Requests.ByVerb["list"])
		}
		return ""
	})
}

// TestUnavailableAPIService: an APIService whose service does not exist
// is not Available, says why, and its group answers 503.
func TestUnavailableAPIService(t *testing.T) {
	t.Parallel()
	lab := startAggregated(t)
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
