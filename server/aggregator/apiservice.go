// Package aggregator serves APIServices (apiregistration.k8s.io/v1) as
// kube-apiserver's aggregator does: each one hands a whole group version,
// /apis/<group>/<version> and everything under it, to another API server
// with storage of its own. kubelab authenticates and authorizes the
// request, then proxies it with the user's identity in X-Remote-User and
// X-Remote-Group; the backend's discovery joins /apis, and its Available
// condition says whether the backend answers.
package aggregator

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"

	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/openapi"
)

// GroupVersionResource of the APIService resource.
var GroupVersionResource = apiregistrationv1.SchemeGroupVersion.WithResource("apiservices")

var readWrite = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// resource is the apiservices row: kube-aggregator's types, defaults and
// validation, stored at /registry/apiregistration.k8s.io/apiservices.
func (a *Aggregator) resource() *kubeapi.Resource {
	return &kubeapi.Resource{
		GroupVersion: apiregistrationv1.SchemeGroupVersion, Name: "apiservices", SingularName: "apiservice", Kind: "APIService",
		Verbs: readWrite, Categories: []string{"api-extensions"}, HasStatus: true, GroupInKey: true,
		// A path segment, as in kube: the core group's is "v1.".
		ValidateName: path.ValidatePathSegmentName,
		New:          func() runtime.Object { return &apiregistrationv1.APIService{} },
		NewList:      func() runtime.Object { return &apiregistrationv1.APIServiceList{} },
		Default: func(obj runtime.Object) {
			apiregistrationv1.SetObjectDefaults_APIService(obj.(*apiregistrationv1.APIService))
		},
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*apiregistrationv1.APIService).Status = apiregistrationv1.APIServiceStatus{}
		},
		Validate: a.validate,
		Table:    apiServiceTable,
	}
}

func (a *Aggregator) validate(obj, old runtime.Object) field.ErrorList {
	svc := obj.(*apiregistrationv1.APIService)
	in := &apiregistration.APIService{}
	if err := apiregistrationv1.Convert_v1_APIService_To_apiregistration_APIService(svc, in, nil); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	var errs field.ErrorList
	if old == nil {
		errs = validation.ValidateAPIService(context.Background(), in)
	} else {
		oldIn := &apiregistration.APIService{}
		if err := apiregistrationv1.Convert_v1_APIService_To_apiregistration_APIService(old.(*apiregistrationv1.APIService), oldIn, nil); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
		}
		errs = validation.ValidateAPIServiceUpdate(context.Background(), in, oldIn)
	}
	if svc.Spec.Service != nil && a.cfg.API.Registry().HasGroup(svc.Spec.Group) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "group"), svc.Spec.Group,
			"is served by this API server; it cannot be handed to another"))
	}
	return errs
}

// apiServiceTable is kubectl's NAME, SERVICE, AVAILABLE, AGE.
var apiServiceTable = &kubeapi.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		svc := obj.(*apiregistrationv1.APIService)
		service := "Local"
		if s := svc.Spec.Service; s != nil {
			service = s.Namespace + "/" + s.Name
		}
		available := "Unknown"
		for _, c := range svc.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				available = string(c.Status)
				if c.Status != apiregistrationv1.ConditionTrue {
					available = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
				}
			}
		}
		age := "<unknown>"
		if !svc.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(now.Sub(svc.CreationTimestamp.Time))
		}
		return []any{service, available, age}
	},
}

// APIServicesOpenAPI describes the aggregator's apiservices in the OpenAPI
// documents, which are built before the aggregator serves them, so that
// `kubectl explain apiservice` works and server-side apply knows its schema.
var APIServicesOpenAPI = openapi.Resource{
	GroupVersion: GroupVersionResource.GroupVersion(), Resource: GroupVersionResource.Resource,
	Kind: "APIService", Verbs: readWrite,
	Object: &apiregistrationv1.APIService{}, List: &apiregistrationv1.APIServiceList{}, Subresources: []string{"status"},
}
