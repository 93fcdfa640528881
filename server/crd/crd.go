// Package crd serves CustomResourceDefinitions (apiextensions.k8s.io/v1):
// the CRD resource itself, validated by apiextensions-apiserver's own
// validation, and a controller that watches the stored CRDs and, for each
// one whose names are accepted, adds its resources to the API as rows of
// the registry, served by the same generic handler as every built-in kind
// and stored as JSON under /registry/<group>/<plural>.
package crd

import (
	"context"
	"sort"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubelab/kubelab/server/kubeapi"
)

// GroupVersionResource of the CRD resource.
var GroupVersionResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

var readWrite = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Extensions serves CRDs: the resource, and once started the controller
// that serves what they define.
type Extensions struct {
	// reserved are the groups served by the API server itself, which no
	// CRD may take; set when the controller starts.
	mu       sync.RWMutex
	reserved map[string]bool

	ctl *controller
}

// New makes an Extensions; add Resources to the API, then Start it.
func New() *Extensions {
	return &Extensions{reserved: map[string]bool{apiextensionsv1.GroupName: true}}
}

// Resources are the rows to serve: customresourcedefinitions.
func (x *Extensions) Resources() []*kubeapi.Resource {
	return []*kubeapi.Resource{{
		GroupVersion: apiextensionsv1.SchemeGroupVersion, Name: "customresourcedefinitions", SingularName: "customresourcedefinition",
		Kind: "CustomResourceDefinition", Verbs: readWrite, ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
		New:     func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Table:   crdTable, HasStatus: true, GroupInKey: true,
		Default: func(obj runtime.Object) {
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition))
		},
		PrepareForCreate: prepareForCreate,
		Validate:         x.validate,
	}}
}

// Reserve marks groups as the API server's own (or handed by it to
// another server), which no CRD may take.
func (x *Extensions) Reserve(groups ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, g := range groups {
		x.reserved[g] = true
	}
}

func (x *Extensions) isReserved(group string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.reserved[group]
}

// prepareForCreate: as kube-apiserver's CRD strategy, a new CRD has no
// conditions yet and has stored only its storage version.
func prepareForCreate(obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if v, err := apihelpers.GetCRDStorageVersion(crd); err == nil {
		crd.Status.StoredVersions = []string{v}
	}
}

// validate runs apiextensions-apiserver's own CRD validation on the
// internal form, and refuses a group the API server serves itself.
func (x *Extensions) validate(obj, old runtime.Object) field.ErrorList {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	in, err := toInternal(crd)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	ctx := context.Background()
	var errs field.ErrorList
	if old == nil {
		errs = validation.ValidateCustomResourceDefinition(ctx, in)
	} else {
		oldIn, err := toInternal(old.(*apiextensionsv1.CustomResourceDefinition))
		if err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
		}
		errs = validation.ValidateCustomResourceDefinitionUpdate(ctx, in, oldIn)
	}
	if x.isReserved(crd.Spec.Group) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "group"), crd.Spec.Group,
			"is served by the API server itself; a CustomResourceDefinition cannot define resources in it"))
	}
	return errs
}

func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// crdTable is kube-apiserver's table for CRDs: NAME and CREATED AT.
var crdTable = &kubeapi.TableSpec{
	Columns: []metav1.TableColumnDefinition{{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		return []any{crd.CreationTimestamp.UTC().Format(time.RFC3339)}
	},
}

// servedVersions lists a CRD's served versions in kube's priority order
// (v2 before v1 before v1beta1), as discovery prefers them.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinitionVersion {
	var out []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(out[i].Name, out[j].Name) > 0 })
	return out
}

// gvr is a CRD version's resource.
func gvr(crd *apiextensionsv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}
