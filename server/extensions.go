package server

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/aggregator"
	"github.com/kubelab/kubelab/server/crd"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/metricsapi"
	"github.com/kubelab/kubelab/server/openapi"
	"github.com/kubelab/kubelab/storage"
)

// The service the metrics APIService names; kubelab resolves it to its own
// metrics server.
const metricsNamespace, metricsService = "kube-system", "kubelab-metrics"

// extensions are the two ways the lesson adds an API group: CRDs, served
// here from etcd, and APIServices, handed to another server (kubelab's own
// metrics server among them).
type extensions struct {
	crds    *crd.Extensions
	agg     *aggregator.Aggregator
	metrics *metricsapi.Server
}

func newExtensions() *extensions { return &extensions{crds: crd.New()} }

// Resources are the rows served from the start: customresourcedefinitions.
func (x *extensions) Resources() []*kubeapi.Resource { return x.crds.Resources() }

// startExtensions starts the metrics server and the aggregator (which
// registers v1beta1.metrics.k8s.io), then the CRD controller; they stop
// when shutdown begins, before the API's stores do.
func (s *Server) startExtensions(api *kubeapi.API, docs *openapi.Service) (err error) {
	x := s.extensions
	if x.metrics, err = metricsapi.Start(metricsapi.Config{Count: countObjects(api, s.etcd.Client()), Traces: s.traces, Logger: s.log}); err != nil {
		return err
	}
	s.OnShutdown(x.metrics.Stop)
	resolve := func(ns, name string, _ int32) (aggregator.Backend, bool) {
		if ns == metricsNamespace && name == metricsService {
			return aggregator.Backend{URL: x.metrics.URL(), Token: x.metrics.Token()}, true
		}
		return aggregator.Backend{}, false
	}
	// The aggregator merges each available backend's OpenAPI into docs.
	if x.agg, err = aggregator.New(aggregator.Config{API: api, Resolve: resolve, Docs: docs, Logger: s.log}); err != nil {
		return err
	}
	x.agg.Start()
	s.OnShutdown(func(context.Context) { x.agg.Stop() })
	ctx, cancel := context.WithTimeout(registry.WithUser(context.Background(), registry.APIServer), 30*time.Second)
	defer cancel()
	if err := x.agg.Register(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: metricsapi.GroupVersion.Version + "." + metricsapi.GroupVersion.Group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: metricsapi.GroupVersion.Group, Version: metricsapi.GroupVersion.Version,
			Service:              &apiregistrationv1.ServiceReference{Namespace: metricsNamespace, Name: metricsService},
			GroupPriorityMinimum: 100, VersionPriority: 100,
		},
	}); err != nil {
		return err
	}
	x.crds.Reserve(metricsapi.GroupVersion.Group)
	if err := x.crds.Start(crd.Config{API: api, Docs: docs, Logger: s.log}); err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { x.crds.Stop() })
	return nil
}

// apiServicesOpenAPI describes the aggregator's apiservices in the OpenAPI
// documents, which are built before the aggregator serves them, so that
// `kubectl explain apiservice` works and server-side apply knows its schema.
var apiServicesOpenAPI = openapi.Resource{
	GroupVersion: aggregator.GroupVersionResource.GroupVersion(), Resource: aggregator.GroupVersionResource.Resource,
	Kind: "APIService", Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
	Object: &apiregistrationv1.APIService{}, List: &apiregistrationv1.APIServiceList{}, Subresources: []string{"status"},
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
