package aggregator

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/metricsapi"
	"github.com/kubelab/kubelab/storage"
)

// The service the metrics APIService names; the aggregator resolves it to
// kubelab's metrics server.
const metricsNamespace, metricsService = "kube-system", "kubelab-metrics"

// StartWithMetrics starts kubelab's metrics server and the aggregator of
// cfg.API, which hands metrics.k8s.io to it through the APIService
// registered here, as kubelab runs them; cfg.Resolve is set here. The
// metrics server counts objects in the API's etcd through client and
// requests from traces (nil: none). The caller stops both.
func StartWithMetrics(cfg Config, client *clientv3.Client, traces metricsapi.Traces) (*Aggregator, *metricsapi.Server, error) {
	metrics, err := metricsapi.Start(metricsapi.Config{Count: countObjects(cfg.API, client), Traces: traces, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, err
	}
	cfg.Resolve = func(ns, name string, _ int32) (Backend, bool) {
		if ns == metricsNamespace && name == metricsService {
			return Backend{URL: metrics.URL(), Token: metrics.Token()}, true
		}
		return Backend{}, false
	}
	a, err := New(cfg)
	if err != nil {
		metrics.Stop(context.Background())
		return nil, nil, err
	}
	a.Start()
	// A component installing its own API registers its APIService; here
	// that is the API server itself.
	ctx, cancel := context.WithTimeout(registry.WithUser(context.Background(), registry.APIServer), 30*time.Second)
	defer cancel()
	gv := metricsapi.GroupVersion
	if err := a.Register(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: gv.Group, Version: gv.Version,
			Service:              &apiregistrationv1.ServiceReference{Namespace: metricsNamespace, Name: metricsService},
			GroupPriorityMinimum: 100, VersionPriority: 100,
		},
	}); err != nil {
		a.Stop()
		metrics.Stop(context.Background())
		return nil, nil, err
	}
	return a, metrics, nil
}

// countObjects counts every namespaced resource's objects by namespace
// from their etcd keys alone (/registry/<resource>/<namespace>/<name>),
// without reading or decoding a value: what the metrics server scrapes.
func countObjects(api *kubeapi.API, client *clientv3.Client) metricsapi.Counter {
	return func(ctx context.Context) (map[string]map[string]int, error) {
		out := map[string]map[string]int{}
		seen := map[string]bool{} // a CRD's versions share one prefix
		for _, r := range api.Registry().All() {
			prefix := storage.ResourcePrefix(r.GroupResource(), r.Custom || r.GroupInKey) + "/"
			if !r.Namespaced || r.Review != nil || seen[prefix] {
				continue
			}
			seen[prefix] = true
			resp, err := client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if err != nil {
				return nil, err
			}
			name := r.GroupResource().String()
			for _, kv := range resp.Kvs {
				ns, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/")
				if !ok {
					continue
				}
				if out[ns] == nil {
					out[ns] = map[string]int{}
				}
				out[ns][name]++
			}
		}
		return out, nil
	}
}
