package crd

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/kubelab/kubelab/server/kubeapi"
)

// customResource builds the registry row that serves one version of a
// CRD: unstructured objects, pruned, defaulted and validated by the
// version's structural schema with apiextensions-apiserver's machinery,
// printed with its additionalPrinterColumns.
func customResource(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, tc managedfields.TypeConverter) (*kubeapi.Resource, error) {
	gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
	names := crd.Status.AcceptedNames
	if names.Plural == "" {
		names = crd.Spec.Names
	}
	gvk := gv.WithKind(names.Kind)
	listGVK := gv.WithKind(names.ListKind)
	if listGVK.Kind == "" {
		listGVK.Kind = names.Kind + "List"
	}
	s, validator, err := schemaOf(crd, v)
	if err != nil {
		return nil, err
	}
	table, err := printerColumns(v.AdditionalPrinterColumns)
	if err != nil {
		return nil, err
	}
	// Objects are kept in etcd as the storage version, whichever version
	// wrote them.
	stored, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	res := &kubeapi.Resource{
		GroupVersion: gv, Name: names.Plural, SingularName: names.Singular, Kind: names.Kind,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, Verbs: readWrite,
		ShortNames: names.ShortNames, Categories: names.Categories,
		New: func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(listGVK)
			return l
		},
		Table:          table,
		HasStatus:      v.Subresources != nil && v.Subresources.Status != nil,
		Custom:         true,
		StorageVersion: stored,
		TypeConverter:  tc,
	}
	if s != nil {
		res.Prune = func(obj runtime.Object) []string {
			return pruning.PruneWithOptions(obj.(*unstructured.Unstructured).Object, s, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		}
		res.Default = func(obj runtime.Object) {
			u := obj.(*unstructured.Unstructured)
			pruning.Prune(u.Object, s, true)
			defaulting.Default(u.Object, s)
		}
	}
	var rules *cel.Validator
	if s != nil {
		// x-kubernetes-validations: CEL rules, compiled once per row.
		rules = cel.NewValidator(s, true, celconfig.PerCallLimit)
	}
	res.Validate = func(obj, old runtime.Object) field.ErrorList {
		u := obj.(*unstructured.Unstructured)
		var oldObj map[string]any
		if old != nil {
			oldObj = old.(*unstructured.Unstructured).Object
		}
		var errs field.ErrorList
		if s != nil {
			errs = append(errs, objectmeta.Validate(context.Background(), nil, u.Object, s, true)...)
		}
		if validator != nil {
			if old == nil {
				errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, validator)...)
			} else {
				errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, oldObj, validator)...)
			}
		}
		if rules != nil && len(errs) == 0 {
			celErrs, _ := rules.Validate(context.Background(), nil, s, u.Object, oldObj, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
		return errs
	}
	return res, nil
}

// schemaOf is a version's structural schema (defaults pruned, as
// kube-apiserver serves them) and its schema validator; both are nil when
// the CRD has no schema for the version.
func schemaOf(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*structuralschema.Structural, apiservervalidation.SchemaValidator, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, nil, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("schema of %s: %w", v.Name, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, nil, fmt.Errorf("schema validator of %s: %w", v.Name, err)
	}
	if crd.Spec.PreserveUnknownFields {
		return nil, validator, nil
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, nil, fmt.Errorf("structural schema of %s: %w", v.Name, err)
	}
	s = s.DeepCopy()
	if err := defaulting.PruneDefaults(s); err != nil {
		return nil, nil, fmt.Errorf("defaults of %s: %w", v.Name, err)
	}
	return s, validator, nil
}

// ageColumn is what a CRD without printer columns prints, as in kube.
var ageColumn = apiextensionsv1.CustomResourceColumnDefinition{
	Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
}

// printerColumns turns additionalPrinterColumns into the Table columns
// kubectl get prints, with apiextensions-apiserver's own table convertor.
func printerColumns(cols []apiextensionsv1.CustomResourceColumnDefinition) (*kubeapi.TableSpec, error) {
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{ageColumn}
	}
	conv, err := tableconvertor.New(cols)
	if err != nil {
		return nil, err
	}
	empty, err := conv.ConvertToTable(context.Background(), &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil, err
	}
	return &kubeapi.TableSpec{
		Columns: empty.ColumnDefinitions[1:], // the generic handler adds NAME
		Cells: func(obj runtime.Object, _ time.Time) []any {
			t, err := conv.ConvertToTable(context.Background(), obj, nil)
			if err != nil || len(t.Rows) != 1 {
				return make([]any, len(empty.ColumnDefinitions)-1)
			}
			return t.Rows[0].Cells[1:]
		},
	}, nil
}
