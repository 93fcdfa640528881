package server

import (
	"context"

	"github.com/kubelab/kubelab/server/crd"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/openapi"
)

// startExtensions serves what CustomResourceDefinitions define, from the
// CRDs in etcd and as they change; it stops when shutdown begins, before
// the API's stores do.
func (s *Server) startExtensions(api *kubeapi.API, docs *openapi.Service) error {
	if err := s.extensions.Start(crd.Config{API: api, Docs: docs, Client: s.etcd.Client(), Logger: s.log}); err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { s.extensions.Stop() })
	return nil
}
