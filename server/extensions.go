package server

import (
	"context"

	"github.com/kubelab/kubelab/server/aggregator"
	"github.com/kubelab/kubelab/server/crd"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/metricsapi"
	"github.com/kubelab/kubelab/server/openapi"
)

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
	// The aggregator merges each available backend's OpenAPI into docs.
	if x.agg, x.metrics, err = aggregator.StartWithMetrics(aggregator.Config{API: api, Docs: docs, Logger: s.log}, s.etcd.Client(), s.traces); err != nil {
		return err
	}
	s.OnShutdown(x.metrics.Stop)
	s.OnShutdown(func(context.Context) { x.agg.Stop() })
	x.crds.Reserve(metricsapi.GroupVersion.Group)
	if err := x.crds.Start(crd.Config{API: api, Docs: docs, Logger: s.log}); err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { x.crds.Stop() })
	return nil
}
