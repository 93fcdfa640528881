package crd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// Documents serves OpenAPI v3 documents built outside the resource set;
// openapi.Service is one.
type Documents interface {
	SetDocument(name string, doc *spec3.OpenAPI)
	// SetV2Spec merges a CRD's OpenAPI v2 document into /openapi/v2 under
	// the CRD's name; nil takes it out.
	SetV2Spec(name string, doc *spec.Swagger) error
}

// Config is what the controller needs from the server.
type Config struct {
	API    *kubeapi.API
	Docs   Documents
	Logger *slog.Logger
}

// Start reserves the groups the API serves now (built-in ones, which no
// CRD may take) and starts the controller: it lists and watches the CRDs
// in etcd, so it serves those created before a restart or through another
// kubelab sharing the etcd, and stops serving deleted ones.
func (x *Extensions) Start(cfg Config) error {
	store, ok := cfg.API.Registry().Store(GroupVersionResource)
	if !ok {
		return errors.New("crd: the API does not serve customresourcedefinitions")
	}
	for _, g := range cfg.API.Registry().Groups() {
		x.Reserve(g.Name)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// apiextensions-apiserver's controllers run inside kube-apiserver:
	// they write as the API server.
	ctx, cancel := context.WithCancel(registry.WithUser(context.Background(), registry.APIServer))
	c := &controller{
		cfg: cfg, store: store, cancel: cancel, done: make(chan struct{}),
		crds: map[string]*apiextensionsv1.CustomResourceDefinition{}, serving: map[string]*served{},
	}
	x.ctl = c
	go c.run(ctx)
	return nil
}

// Started reports whether the controller runs (kube's
// start-apiextensions-informers and start-apiextensions-controllers hooks).
func (x *Extensions) Started() bool { return x.ctl != nil }

// Synced reports whether every CRD stored when the controller started is
// served (kube's crd-informer-synced hook).
func (x *Extensions) Synced() bool { return x.ctl != nil && x.ctl.synced.Load() }

// Stop ends the controller; what it serves stays served until the API stops.
func (x *Extensions) Stop() {
	if x.ctl != nil {
		x.ctl.cancel()
		<-x.ctl.done
	}
}

// controller keeps the API serving what the stored CRDs define.
type controller struct {
	cfg    Config
	store  *registry.Store
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	crds    map[string]*apiextensionsv1.CustomResourceDefinition // by name, as last seen
	serving map[string]*served                                   // by CRD name
	// synced is set once every CRD stored at the first list is served.
	synced atomic.Bool
}

// served is what one CRD added to the API.
type served struct {
	uid  types.UID
	key  string // what the rows were built from; a change rebuilds them
	gvrs []schema.GroupVersionResource
}

func (c *controller) run(ctx context.Context) {
	defer close(c.done)
	informer.New("customresourcedefinitions", c.store, storedCRDs{c, ctx}, c.cfg.Logger).Run(ctx)
}

// storedCRDs is the informer's handler: it serves every stored CRD, and
// stops serving deleted ones, as apiextensions-apiserver's controllers
// follow their CRD informer.
type storedCRDs struct {
	c *controller
	// ctx is the controller's own (the API server's identity, ended by
	// Stop): the informer's handler methods take none.
	ctx context.Context
}

// Replace syncs with every stored CRD: at start, and after a 410.
func (h storedCRDs) Replace(objs []runtime.Object) {
	c := h.c
	present := map[string]bool{}
	for _, obj := range objs {
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		present[crd.Name] = true
		c.upsert(h.ctx, crd)
	}
	c.mu.Lock()
	var gone []string
	for name := range c.crds {
		if !present[name] {
			gone = append(gone, name)
		}
	}
	c.mu.Unlock()
	for _, name := range gone {
		c.remove(h.ctx, name)
	}
	c.synced.Store(true)
}

func (h storedCRDs) Upsert(obj runtime.Object) {
	h.c.upsert(h.ctx, obj.(*apiextensionsv1.CustomResourceDefinition))
}

func (h storedCRDs) Remove(obj runtime.Object) {
	h.c.remove(h.ctx, obj.(*apiextensionsv1.CustomResourceDefinition).Name)
}

// upsert serves a CRD whose names are accepted and records its conditions.
func (c *controller) upsert(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.crds[crd.Name]; ok && old.UID != crd.UID {
		c.unserveLocked(ctx, crd.Name, true) // deleted and created again while we looked away
	}
	c.crds[crd.Name] = crd
	names, accepted, established := c.namesAndConditions(crd)
	ok := accepted.Status == apiextensionsv1.ConditionTrue
	if ok {
		next := crd.DeepCopy()
		next.Status.AcceptedNames = names
		if err := c.serveLocked(ctx, next); err != nil {
			c.cfg.Logger.Error("serving a CustomResourceDefinition", "name", crd.Name, "err", err)
			ok = false
			established.Reason, established.Message = "InstallFailed", err.Error()
		} else {
			established = apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
				Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
			}
		}
	}
	if !ok {
		c.unserveLocked(ctx, crd.Name, false)
	}
	c.writeStatus(ctx, crd, names, accepted, established)
}

// namesAndConditions is kube's naming controller: a name is accepted when
// it is the CRD's already or no other CRD of the group has accepted it.
func (c *controller) namesAndConditions(in *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := sets.New[string](), sets.New[string]()
	for _, other := range c.crds {
		if other.Spec.Group != in.Spec.Group || other.Name == in.Name {
			continue
		}
		n := other.Status.AcceptedNames
		resources.Insert(n.Plural, n.Singular)
		resources.Insert(n.ShortNames...)
		kinds.Insert(n.Kind, n.ListKind)
	}
	resources.Delete("")
	kinds.Delete("")
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}
	want, names := in.Spec.Names, in.Status.AcceptedNames
	conflict := func(reason string, used sets.Set[string], requested []string) bool {
		for _, n := range requested {
			if used.Has(n) {
				cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, fmt.Sprintf("%q is already in use", n)
				return true
			}
		}
		return false
	}
	if !conflict("PluralConflict", resources, []string{want.Plural}) {
		names.Plural = want.Plural
	}
	if !conflict("SingularConflict", resources, []string{want.Singular}) {
		names.Singular = want.Singular
	}
	if !conflict("ShortNamesConflict", resources, want.ShortNames) {
		names.ShortNames = want.ShortNames
	}
	if !conflict("KindConflict", kinds, []string{want.Kind}) {
		names.Kind = want.Kind
	}
	if !conflict("ListKindConflict", kinds, []string{want.ListKind}) {
		names.ListKind = want.ListKind
	}
	names.Categories = want.Categories
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted",
	}
	return names, cond, established
}

// writeStatus records accepted names and conditions when they changed.
// Every kubelab sharing the etcd computes the same status, so a lost race
// leaves nothing to do.
func (c *controller) writeStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames, conds ...apiextensionsv1.CustomResourceDefinitionCondition) {
	if !statusDiffers(crd, names, conds) {
		return
	}
	_, err := c.store.Update(ctx, storage.Key{Name: crd.Name}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		next := cur.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
		if !statusDiffers(next, names, conds) {
			return nil, errUnchanged
		}
		next.Status.AcceptedNames = names
		for _, cond := range conds {
			apihelpers.SetCRDCondition(next, cond)
		}
		return next, nil
	}), registry.UpdateOptions{Subresource: "status", FieldManager: fieldManager, Preconditions: &storage.Preconditions{UID: &crd.UID}})
	if err != nil && !errors.Is(err, errUnchanged) && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		c.cfg.Logger.Warn("writing a CustomResourceDefinition's status", "name", crd.Name, "err", err)
	}
}

var errUnchanged = errors.New("status unchanged")

// fieldManager is the manager of what the controller writes: kube-
// apiserver's, where apiextensions-apiserver runs.
const fieldManager = registry.APIServerFieldManager

func statusDiffers(crd *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames, conds []apiextensionsv1.CustomResourceDefinitionCondition) bool {
	if !reflect.DeepEqual(crd.Status.AcceptedNames, names) {
		return true
	}
	for i := range conds {
		if !apihelpers.IsCRDConditionEquivalent(&conds[i], apihelpers.FindCRDCondition(crd, conds[i].Type)) {
			return true
		}
	}
	return false
}

// serveLocked adds (or, after a change, rebuilds) the CRD's resources.
func (c *controller) serveLocked(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	key := servingKey(crd)
	prev, had := c.serving[crd.Name]
	if had && prev.key == key {
		return nil
	}
	// A changed CRD's rows replace the old ones in place: a client reading
	// its objects meanwhile (waiting for a new default, say) must not get
	// a 404 from the moment between.
	was := map[schema.GroupVersionResource]bool{}
	if had {
		for _, gvr := range prev.gvrs {
			was[gvr] = true
		}
	}
	tc := typeConverter(crd)
	s := &served{uid: crd.UID, key: key}
	for _, v := range servedVersions(crd) {
		res, err := customResource(crd, v, tc)
		if err == nil {
			err = c.cfg.API.ReplaceResource(res)
		}
		if err != nil {
			c.unserveLocked(ctx, crd.Name, false)
			for _, gvr := range s.gvrs {
				c.cfg.API.RemoveResource(gvr)
			}
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		gvr := res.GroupVersion.WithResource(res.Name)
		s.gvrs = append(s.gvrs, gvr)
		delete(was, gvr)
	}
	for gvr := range was {
		c.cfg.API.RemoveResource(gvr) // a version no longer served, or renamed
	}
	c.serving[crd.Name] = s
	c.updateDocumentsLocked(append(s.gvrs, keys(was)...))
	c.updateV2Locked(crd)
	return nil
}

func keys(set map[schema.GroupVersionResource]bool) []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(set))
	for gvr := range set {
		out = append(out, gvr)
	}
	return out
}

// servingKey changes whenever what the rows are built from changes.
func servingKey(crd *apiextensionsv1.CustomResourceDefinition) string {
	return fmt.Sprintf("%s/%d/%v", crd.UID, crd.Generation, crd.Status.AcceptedNames)
}

// remove forgets a deleted CRD: its resources leave the API and its
// objects leave etcd.
func (c *controller) remove(ctx context.Context, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unserveLocked(ctx, name, true)
	delete(c.crds, name)
}

// unserveLocked stops serving a CRD's resources; with purge, as when the
// CRD is deleted, its objects are deleted too, through their store.
func (c *controller) unserveLocked(ctx context.Context, name string, purge bool) {
	s, ok := c.serving[name]
	if !ok {
		return
	}
	delete(c.serving, name)
	var store *registry.Store
	if purge && len(s.gvrs) > 0 {
		// Every served version shares the one store.
		store, _ = c.cfg.API.Registry().Store(s.gvrs[0])
	}
	if store != nil {
		// While the resource is still served, so that its watchers see
		// its objects go.
		c.purge(ctx, store, false)
	}
	for _, gvr := range s.gvrs {
		c.cfg.API.RemoveResource(gvr)
	}
	if store != nil {
		// Whatever was created while the first pass ran, now that nothing
		// can create more; the store still writes etcd once unserved.
		c.purge(ctx, store, true)
	}
	c.updateDocumentsLocked(s.gvrs)
	if c.cfg.Docs != nil {
		if err := c.cfg.Docs.SetV2Spec(name, nil); err != nil {
			c.cfg.Logger.Warn("removing a CustomResourceDefinition's OpenAPI v2", "name", name, "err", err)
		}
	}
}

// purge deletes every object of a deleted CRD as kube's CRD finalizer
// does: a deletecollection through the resource's store, by the API
// server (the finalizer is part of kube-apiserver), so that the trace and
// the watchers see it as any other deletion. kube keeps a CRD until its
// objects are gone, waiting on their finalizers; kubelab deletes the CRD
// at once, so on the last pass, once no client can reach the objects any
// more, it also takes away the finalizers that still hold some.
func (c *controller) purge(ctx context.Context, store *registry.Store, last bool) {
	gr := store.GroupResource()
	held, err := store.DeleteCollection(ctx, storage.ListOptions{}, registry.DeleteOptions{})
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Warn("deleting a deleted CustomResourceDefinition's objects", "resource", gr, "err", err)
		}
		return
	}
	if !last {
		return
	}
	for _, obj := range held {
		m, err := meta.Accessor(obj)
		if err != nil || len(m.GetFinalizers()) == 0 {
			continue // gone already
		}
		_, err = store.Update(ctx, storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			next := cur.DeepCopyObject()
			cm, err := meta.Accessor(next)
			if err != nil {
				return nil, err
			}
			cm.SetFinalizers(nil)
			return next, nil
		}), registry.UpdateOptions{FieldManager: fieldManager, Preconditions: &storage.Preconditions{UID: new(m.GetUID())}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			c.cfg.Logger.Warn("releasing a deleted CustomResourceDefinition's object", "resource", gr, "namespace", m.GetNamespace(), "name", m.GetName(), "err", err)
		}
	}
}
