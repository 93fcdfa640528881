package crd

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// typeConverter gives server-side apply a CRD's schemas, built as
// kube-apiserver builds them; without a usable schema, apply deduces one
// from the objects.
func typeConverter(crd *apiextensionsv1.CustomResourceDefinition) managedfields.TypeConverter {
	var docs []*spec3.OpenAPI
	for _, v := range crd.Spec.Versions {
		doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return managedfields.NewDeducedTypeConverter()
		}
		docs = append(docs, doc)
	}
	merged, err := builder.MergeSpecsV3(docs...)
	if err != nil || merged.Components == nil {
		return managedfields.NewDeducedTypeConverter()
	}
	tc, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return managedfields.NewDeducedTypeConverter()
	}
	return tc
}

// updateDocumentsLocked rebuilds the OpenAPI v3 document of each group
// version gvrs touch, from every CRD served in it, as kube-apiserver
// publishes /openapi/v3/apis/<group>/<version>.
func (c *controller) updateDocumentsLocked(gvrs []schema.GroupVersionResource) {
	if c.cfg.Docs == nil {
		return
	}
	done := map[schema.GroupVersion]bool{}
	for _, gvr := range gvrs {
		gv := gvr.GroupVersion()
		if done[gv] {
			continue
		}
		done[gv] = true
		var docs []*spec3.OpenAPI
		for name, s := range c.serving {
			crd := c.crds[name]
			if crd == nil || !servesVersion(s, gv) {
				continue
			}
			crd = crd.DeepCopy()
			crd.Status.AcceptedNames = crd.Spec.Names
			doc, err := builder.BuildOpenAPIV3(crd, gv.Version, builder.Options{})
			if err != nil {
				c.cfg.Logger.Warn("building a CustomResourceDefinition's OpenAPI", "name", name, "err", err)
				continue
			}
			docs = append(docs, doc)
		}
		name := "apis/" + gv.Group + "/" + gv.Version
		if len(docs) == 0 {
			c.cfg.Docs.SetDocument(name, nil)
			continue
		}
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			c.cfg.Logger.Warn("merging CustomResourceDefinitions' OpenAPI", "groupVersion", gv, "err", err)
			continue
		}
		c.cfg.Docs.SetDocument(name, merged)
	}
}

func servesVersion(s *served, gv schema.GroupVersion) bool {
	for _, gvr := range s.gvrs {
		if gvr.GroupVersion() == gv {
			return true
		}
	}
	return false
}

// updateV2Locked publishes the CRD's served versions in /openapi/v2, built
// and merged as kube-apiserver's CRD OpenAPI controller does (defaults
// pruned, to merge cleanly with the built-in definitions).
func (c *controller) updateV2Locked(crd *apiextensionsv1.CustomResourceDefinition) {
	if c.cfg.Docs == nil {
		return
	}
	crd = crd.DeepCopy()
	crd.Status.AcceptedNames = crd.Spec.Names
	merged := &spec.Swagger{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		doc, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
		if err == nil {
			doc.Definitions = handler.PruneDefaults(doc.Definitions)
			merged, err = builder.MergeSpecs(merged, doc)
		}
		if err != nil {
			c.cfg.Logger.Warn("building a CustomResourceDefinition's OpenAPI v2", "name", crd.Name, "version", v.Name, "err", err)
			return
		}
	}
	if err := c.cfg.Docs.SetV2Spec(crd.Name, merged); err != nil {
		c.cfg.Logger.Warn("publishing a CustomResourceDefinition's OpenAPI v2", "name", crd.Name, "err", err)
	}
}
