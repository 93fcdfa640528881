package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
)

// StoredBytes is kubelab's own quota resource (Kubernetes has none for
// it): the bytes a namespace's objects take in etcd. Object counts alone
// would still let a student store their count times the largest object
// (1.5 MiB) each; this bounds the sum. An object's request is its encoded
// (protobuf, or JSON for custom resources) size; usage is recalculated
// from the values as etcd holds them, envelope included.
const StoredBytes corev1.ResourceName = "kubelab.io/stored-bytes"

// legacyCounts are the object-count names kube's quota knows besides
// count/<resource>.<group>.
var legacyCounts = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "pods"}: corev1.ResourcePods, {Resource: "services"}: corev1.ResourceServices,
	{Resource: "configmaps"}: corev1.ResourceConfigMaps, {Resource: "secrets"}: corev1.ResourceSecrets,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas, {Resource: "persistentvolumeclaims"}: corev1.ResourcePersistentVolumeClaims,
}

// QuotaStore reads a namespace's ResourceQuotas and writes their status.
type QuotaStore interface {
	Quotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error)
	// UpdateStatus writes q's status if q is still at its
	// resourceVersion, and is a Conflict error if it is not.
	UpdateStatus(ctx context.Context, q *corev1.ResourceQuota) error
}

// QuotaUsage recalculates what a namespace uses from what is stored.
type QuotaUsage interface {
	// Objects is how many objects of gr the namespace holds.
	Objects(ctx context.Context, gr schema.GroupResource, namespace string) (int64, error)
	// StoredBytes is what all of the namespace's objects take in etcd.
	StoredBytes(ctx context.Context, namespace string) (int64, error)
}

// ResourceQuota is kube-apiserver's ResourceQuota admission plugin for
// object counts (count/<resource>.<group>, pods, configmaps, secrets...)
// and kubelab's StoredBytes: a create or update whose usage would pass a
// quota's hard limit is refused with kube's message, and one admitted is
// added to the quota's status.used before it is stored, so kubectl
// describe quota shows used/hard. The status write is guarded by the
// quota's resourceVersion, so two requests at once cannot both count on
// the same room: the second starts again from the first's count. What
// goes away is counted out by the quota controller, which recalculates
// status.used from what is stored, as kube's does.
type ResourceQuota struct {
	Quotas QuotaStore
	Usage  QuotaUsage
}

var _ ValidatingPlugin = (*ResourceQuota)(nil)

// Name implements ValidatingPlugin.
func (*ResourceQuota) Name() string { return "ResourceQuota" }

// conflictRetries is how often a check starts again after another
// request changed the quota's status meanwhile (kube's is 3).
const conflictRetries = 3

// Validate implements ValidatingPlugin.
func (p *ResourceQuota) Validate(ctx context.Context, a *pipeline.Attributes) error {
	if a.Namespace == "" || a.Subresource != "" || a.Object == nil || (a.Operation != pipeline.Create && a.Operation != pipeline.Update) {
		return nil
	}
	// The quotas first: most namespaces have none, and then the object
	// need not be sized.
	quotas, err := p.Quotas.Quotas(ctx, a.Namespace)
	if err != nil || len(quotas) == 0 {
		return internalError(err)
	}
	requested := requestedUsage(a)
	if len(requested) == 0 {
		return nil
	}
	for range conflictRetries {
		err := p.admitAll(ctx, a, quotas, requested)
		if !apierrors.IsConflict(err) {
			return err
		}
		// Another request counted itself in meanwhile: start again from
		// its count.
		if quotas, err = p.Quotas.Quotas(ctx, a.Namespace); err != nil {
			return internalError(err)
		}
	}
	return NewForbidden(a, fmt.Errorf("status unknown for quota: the quota changed %d times during the check; retry", conflictRetries))
}

func internalError(err error) error {
	if err == nil {
		return nil
	}
	return apierrors.NewInternalError(err)
}

func (p *ResourceQuota) admitAll(ctx context.Context, a *pipeline.Attributes, quotas []*corev1.ResourceQuota, requested corev1.ResourceList) error {
	for _, q := range quotas {
		if err := p.admit(ctx, a, q, requested); err != nil {
			return err
		}
	}
	return nil
}

// admit checks one quota and, if the request fits, counts it in.
func (p *ResourceQuota) admit(ctx context.Context, a *pipeline.Attributes, q *corev1.ResourceQuota, requested corev1.ResourceList) error {
	var constrained []corev1.ResourceName
	for name := range requested {
		if _, ok := q.Spec.Hard[name]; ok {
			constrained = append(constrained, name)
		}
	}
	if len(constrained) == 0 {
		return nil
	}
	used, err := p.used(ctx, q)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	failedRequested, failedUsed, failedHard := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	after := used.DeepCopy()
	for _, name := range constrained {
		sum := after[name]
		sum.Add(requested[name])
		after[name] = sum
		if hard := q.Spec.Hard[name]; sum.Cmp(hard) > 0 {
			failedRequested[name], failedUsed[name], failedHard[name] = requested[name], used[name], hard
		}
	}
	if len(failedHard) > 0 {
		return NewForbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
			q.Name, prettyPrint(failedRequested), prettyPrint(failedUsed), prettyPrint(failedHard)))
	}
	if a.DryRun {
		return nil
	}
	q = q.DeepCopy()
	q.Status.Hard, q.Status.Used = q.Spec.Hard, after
	return p.Quotas.UpdateStatus(ctx, q)
}

// used is the quota's status.used, as kube's admission reads it: it holds
// what earlier admissions counted in, including requests admitted but not
// yet stored, which a fresh count would miss. What it lacks (a new quota,
// a new limit) is counted from what is stored now.
func (p *ResourceQuota) used(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	missing := corev1.ResourceList{}
	for name, hard := range q.Spec.Hard {
		if _, ok := q.Status.Used[name]; !ok {
			missing[name] = hard
		}
	}
	used, err := QuotaUsed(ctx, p.Usage, q.Namespace, missing)
	if err != nil {
		return nil, err
	}
	for name, n := range q.Status.Used {
		if _, ok := q.Spec.Hard[name]; ok {
			used[name] = n.DeepCopy()
		}
	}
	return used, nil
}

// QuotaUsed is the namespace's usage of every resource of hard that
// kubelab counts, from what is stored now: what the quota controller
// writes to status.used after objects change or go.
func QuotaUsed(ctx context.Context, usage QuotaUsage, namespace string, hard corev1.ResourceList) (corev1.ResourceList, error) {
	used := corev1.ResourceList{}
	for name := range hard {
		var n int64
		var err error
		format := resource.DecimalSI
		switch gr, ok := countedResource(name); {
		case name == StoredBytes:
			n, err = usage.StoredBytes(ctx, namespace)
			format = resource.BinarySI
		case ok:
			n, err = usage.Objects(ctx, gr, namespace)
		default:
			continue // cpu, memory...: not counted by kubelab
		}
		if err != nil {
			return nil, err
		}
		used[name] = *resource.NewQuantity(n, format)
	}
	return used, nil
}

// countedResource is the resource whose objects name counts.
func countedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	for gr, legacy := range legacyCounts {
		if legacy == name {
			return gr, true
		}
	}
	s, ok := strings.CutPrefix(string(name), "count/")
	if !ok || s == "" {
		return schema.GroupResource{}, false
	}
	return schema.ParseGroupResource(s), true
}

// requestedUsage is what the request adds: on create one object (under
// both names kube gives it) and its size; on update the growth in size.
func requestedUsage(a *pipeline.Attributes) corev1.ResourceList {
	out := corev1.ResourceList{}
	size := encodedSize(a.Object)
	if a.Operation == pipeline.Update {
		if a.OldObject == nil {
			return out
		}
		if grow := size - encodedSize(a.OldObject); grow > 0 {
			out[StoredBytes] = *resource.NewQuantity(grow, resource.BinarySI)
		}
		return out
	}
	gr := a.GroupResource()
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out[corev1.ResourceName("count/"+gr.String())] = one
	if legacy, ok := legacyCounts[gr]; ok {
		out[legacy] = one
	}
	out[StoredBytes] = *resource.NewQuantity(size, resource.BinarySI)
	return out
}

// encodedSize is the size of obj as etcd will hold it, near enough: the
// protobuf size of a built-in kind, the JSON size of a custom resource.
func encodedSize(obj runtime.Object) int64 {
	if s, ok := obj.(interface{ Size() int }); ok {
		return int64(s.Size())
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// prettyPrint is kube's: name=value pairs sorted by name.
func prettyPrint(list corev1.ResourceList) string {
	var parts []string
	for name, q := range list {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
