package aggregator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// AutoManagedLabel marks the APIServices the aggregator keeps for the
// group versions kubelab serves itself, with kube's label and values:
// "onstart" for built-in groups, registered when the server starts (one
// deleted afterwards stays deleted until the next start), and "true" for
// CRDs' group versions, kept in step with the CRDs.
const (
	AutoManagedLabel = "kube-aggregator.kubernetes.io/automanaged"
	managedOnStart   = "onstart"
	managedAlways    = "true"
)

// priority is an APIService's place in discovery: its group's among the
// groups, its version's within the group.
type priority struct{ group, version int32 }

// builtinPriorities are kube-apiserver's for the groups kubelab serves, so
// discovery lists them in kube's order. A group version not in the table
// gets no APIService, as in kube, where that keeps a CRD's group version
// from being registered as built-in by mistake.
var builtinPriorities = map[schema.GroupVersion]priority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
}

// crdPriority is what kube's CRD registration gives every CRD group
// version: below all built-in groups, versions sorted kube-like.
var crdPriority = priority{1000, 100}

// autoregistration keeps a local APIService (one without a service: kubelab
// serves it) for every group version kubelab serves, as kube-apiserver's
// autoregister and CRD registration controllers do. That is why `kubectl
// get apiservices` lists v1.apps as Local next to an aggregated API.
type autoregistration struct {
	apiServices *registry.Store
	crds        *registry.Store
	builtin     map[string]*apiregistrationv1.APIService
	loop        *controller.Loop
	feeds       []interface{ Run(context.Context) }

	mu sync.Mutex
	// registered is set once the built-in APIServices were registered.
	registered bool
	// pending are the built-in APIServices not yet seen Available.
	pending map[string]bool
}

// syncKey is the loop's one key: every change means "compare it all again".
const syncKey = "apiservices"

// startAutoregistration registers local APIServices for the built-in group
// versions the API serves now, and for CRDs' served versions as CRDs come
// and go, until ctx ends.
func (a *Aggregator) startAutoregistration(ctx context.Context, wg *sync.WaitGroup) {
	r := &autoregistration{apiServices: a.store, builtin: map[string]*apiregistrationv1.APIService{}, pending: map[string]bool{}}
	r.crds, _ = a.cfg.API.Registry().Store(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	for _, res := range a.cfg.API.Registry().All() {
		if p, ok := builtinPriorities[res.GroupVersion]; ok && !res.Custom {
			svc := localAPIService(res.GroupVersion, p, managedOnStart)
			r.builtin[svc.Name] = svc
			r.pending[svc.Name] = true
		}
	}
	r.loop = controller.New("autoregister", r.sync, a.cfg.Logger)
	everything := func(runtime.Object) (string, bool) { return syncKey, true }
	r.feeds = append(r.feeds, controller.Feed("apiservices", r.apiServices, everything, r.loop))
	if r.crds != nil {
		r.feeds = append(r.feeds, controller.Feed("customresourcedefinitions", r.crds, everything, r.loop))
	}
	a.mu.Lock()
	a.autoreg = r
	a.mu.Unlock()
	r.loop.Enqueue(syncKey)
	for _, f := range r.feeds {
		wg.Go(func() { f.Run(ctx) })
	}
	wg.Go(func() { r.loop.Run(ctx) })
}

// Autoregistered reports whether the built-in group versions' APIServices
// have been registered: kube's kube-apiserver-autoregistration hook.
func (a *Aggregator) Autoregistered() bool {
	r := a.autoregistrar()
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered
}

// AutoregisterPending are the built-in APIServices not yet seen Available
// (kube's autoregister-completion check); each leaves the list the first
// time it is. It is nil once all have been.
func (a *Aggregator) AutoregisterPending() []string {
	r := a.autoregistrar()
	if r == nil {
		return []string{"(autoregistration not started)"}
	}
	a.mu.RLock()
	available := map[string]bool{}
	for name, svc := range a.services {
		available[name] = helper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available)
	}
	a.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	var pending []string
	for name := range r.pending {
		if available[name] {
			delete(r.pending, name)
			continue
		}
		pending = append(pending, name)
	}
	sort.Strings(pending)
	return pending
}

func (a *Aggregator) autoregistrar() *autoregistration {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.autoreg
}

// sync compares the stored APIServices with the wanted ones: it creates the
// missing, corrects the changed and deletes the managed ones nobody wants
// any more. Unlabelled APIServices belong to someone else and are left
// alone.
func (r *autoregistration) sync(ctx context.Context, _ string) error {
	list, err := r.apiServices.List(ctx, storage.ListOptions{})
	if err != nil {
		return err
	}
	want, err := r.crdAPIServices(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	atStart := !r.registered
	r.mu.Unlock()
	if atStart {
		for name, svc := range r.builtin {
			want[name] = svc
		}
	}
	existing := map[string]*apiregistrationv1.APIService{}
	for _, obj := range list.Items {
		svc := obj.(*apiregistrationv1.APIService)
		existing[svc.Name] = svc
	}
	var errs []error
	for name, svc := range want {
		cur, ok := existing[name]
		switch {
		case !ok:
			errs = append(errs, r.create(ctx, svc))
		case cur.Labels[AutoManagedLabel] == "":
			// Someone registered this group version themselves.
		case cur.Labels[AutoManagedLabel] != svc.Labels[AutoManagedLabel] || !equality.Semantic.DeepEqual(cur.Spec, svc.Spec):
			errs = append(errs, r.correct(ctx, svc))
		}
	}
	for name, cur := range existing {
		managed := cur.Labels[AutoManagedLabel]
		if _, wanted := want[name]; wanted || (managed != managedAlways && !(managed == managedOnStart && atStart)) {
			continue
		}
		uid := cur.UID
		_, _, err := r.apiServices.Delete(ctx, storage.Key{Name: name}, registry.DeleteOptions{Preconditions: &storage.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting APIService %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if atStart {
		r.mu.Lock()
		r.registered = true
		r.mu.Unlock()
	}
	return nil
}

// crdAPIServices are the APIServices the CRDs' served versions want.
func (r *autoregistration) crdAPIServices(ctx context.Context) (map[string]*apiregistrationv1.APIService, error) {
	want := map[string]*apiregistrationv1.APIService{}
	if r.crds == nil {
		return want, nil
	}
	list, err := r.crds.List(ctx, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, obj := range list.Items {
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		for _, v := range crd.Spec.Versions {
			gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
			if _, builtin := builtinPriorities[gv]; v.Served && !builtin {
				svc := localAPIService(gv, crdPriority, managedAlways)
				want[svc.Name] = svc
			}
		}
	}
	return want, nil
}

func (r *autoregistration) create(ctx context.Context, svc *apiregistrationv1.APIService) error {
	svc = svc.DeepCopy()
	_, err := r.apiServices.Create(ctx, svc, registry.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering APIService %s: %w", svc.Name, err)
	}
	return nil
}

// correct puts back the spec and label of a managed APIService that was
// edited.
func (r *autoregistration) correct(ctx context.Context, svc *apiregistrationv1.APIService) error {
	_, err := r.apiServices.Update(ctx, storage.Key{Name: svc.Name}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		next := cur.(*apiregistrationv1.APIService).DeepCopy()
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		next.Labels[AutoManagedLabel] = svc.Labels[AutoManagedLabel]
		next.Spec = svc.Spec
		return next, nil
	}), registry.UpdateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("correcting APIService %s: %w", svc.Name, err)
	}
	return nil
}

// localAPIService is the APIService of a group version kubelab serves
// itself: no service, so the aggregator does not hand it on.
func localAPIService(gv schema.GroupVersion, p priority, managed string) *apiregistrationv1.APIService {
	svc := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{AutoManagedLabel: managed}},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: p.group, VersionPriority: p.version,
		},
	}
	apiregistrationv1.SetObjectDefaults_APIService(svc)
	return svc
}
