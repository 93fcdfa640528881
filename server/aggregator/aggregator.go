package aggregator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// Backend is where a service is reached: its base URL, and the bearer
// token the aggregator presents to it (standing in for kube-apiserver's
// front-proxy client certificate) so it can trust X-Remote-User.
type Backend struct {
	URL   string
	Token string
}

// Resolver finds the backend behind a service reference; false means the
// service does not exist.
type Resolver func(namespace, name string, port int32) (Backend, bool)

// Config is what the aggregator needs.
type Config struct {
	API     *kubeapi.API
	Resolve Resolver
	Logger  *slog.Logger
	// CheckInterval is how often backends are checked; 0 means 5 seconds.
	CheckInterval time.Duration
	// Docs gets the backends' OpenAPI documents (openapi.go); nil
	// aggregates none. OpenAPIInterval is how often they are fetched
	// again; 0 means a minute, as in kube.
	Docs            OpenAPIDocs
	OpenAPIInterval time.Duration
}

// Aggregator hands APIServices' group versions to their backends.
type Aggregator struct {
	cfg    Config
	store  *registry.Store
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}

	openapi *openAPIController // openapi.go

	mu       sync.RWMutex
	services map[string]*apiregistrationv1.APIService // by name, as stored
	backends map[schema.GroupVersion]*backend
	autoreg  *autoregistration

	// listed is set once the stored APIServices were first read and
	// their backends made; checked once every backend was first checked.
	listed, checked atomic.Bool
}

// New serves apiservices in cfg.API; Start hands their groups on.
func New(cfg Config) (*Aggregator, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = 5 * time.Second
	}
	if cfg.OpenAPIInterval == 0 {
		cfg.OpenAPIInterval = time.Minute
	}
	a := &Aggregator{cfg: cfg, done: make(chan struct{}), kick: make(chan struct{}, 1),
		services: map[string]*apiregistrationv1.APIService{}, backends: map[schema.GroupVersion]*backend{}}
	a.openapi = newOpenAPIController(a)
	if err := cfg.API.AddResource(a.resource()); err != nil {
		return nil, err
	}
	a.store, _ = cfg.API.Registry().Store(GroupVersionResource)
	return a, nil
}

// Start follows the stored APIServices, checks their backends and registers
// the group versions served locally until Stop.
func (a *Aggregator) Start() {
	// kube-aggregator runs inside kube-apiserver: its controllers write
	// as the API server.
	ctx, cancel := context.WithCancel(registry.WithUser(context.Background(), registry.APIServer))
	a.cancel = cancel
	a.cfg.API.SetAggregator(a)
	var wg sync.WaitGroup
	services := informer.New("apiservices", a.store, storedServices{a}, a.cfg.Logger)
	wg.Go(func() { services.Run(ctx) })
	wg.Go(func() { a.checkLoop(ctx) })
	a.startAutoregistration(ctx, &wg)
	wg.Go(func() { a.openapi.run(ctx) })
	go func() { wg.Wait(); close(a.done) }()
}

// Stop ends following and checking.
func (a *Aggregator) Stop() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
}

// Register creates an APIService unless one of that name exists, as a
// component installing its own API does; it writes as ctx's user.
func (a *Aggregator) Register(ctx context.Context, svc *apiregistrationv1.APIService) error {
	svc = svc.DeepCopy()
	apiregistrationv1.SetObjectDefaults_APIService(svc)
	if errs := a.validate(svc, nil); len(errs) > 0 {
		return errs.ToAggregate()
	}
	_, err := a.store.Create(ctx, svc, registry.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// storedServices is the informer's handler: it keeps the stored
// APIServices and their backends, as kube-aggregator's APIService
// informer feeds its controllers.
type storedServices struct{ a *Aggregator }

func (h storedServices) Replace(objs []runtime.Object) {
	a := h.a
	services := map[string]*apiregistrationv1.APIService{}
	for _, obj := range objs {
		svc := obj.(*apiregistrationv1.APIService)
		services[svc.Name] = svc
	}
	a.mu.Lock()
	a.services = services
	a.rebuildLocked()
	a.mu.Unlock()
	a.listed.Store(true)
	a.kickCheck()
}

func (h storedServices) Upsert(obj runtime.Object) {
	a, svc := h.a, obj.(*apiregistrationv1.APIService)
	a.mu.Lock()
	_, known := a.services[svc.Name]
	a.services[svc.Name] = svc
	changed := a.rebuildLocked()
	a.mu.Unlock()
	// A new APIService, local ones included, gets its Available
	// condition now rather than at the next periodic check.
	if changed || !known {
		a.kickCheck()
	}
}

func (h storedServices) Remove(obj runtime.Object) {
	a := h.a
	a.mu.Lock()
	delete(a.services, obj.(*apiregistrationv1.APIService).Name)
	changed := a.rebuildLocked()
	a.mu.Unlock()
	if changed {
		a.kickCheck()
	}
}

// rebuildLocked makes a backend for every APIService with a service, and
// keeps the ones whose spec did not change; it reports a change.
func (a *Aggregator) rebuildLocked() bool {
	next := map[schema.GroupVersion]*backend{}
	changed := false
	for _, svc := range a.services {
		if svc.Spec.Service == nil {
			continue
		}
		gv := schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}
		if b, ok := a.backends[gv]; ok && reflect.DeepEqual(b.spec, svc.Spec) {
			next[gv] = b
			continue
		}
		next[gv] = a.newBackend(svc)
		changed = true
	}
	if len(next) != len(a.backends) {
		changed = true
	}
	a.backends = next
	return changed
}

func (a *Aggregator) newBackend(svc *apiregistrationv1.APIService) *backend {
	b := &backend{name: svc.Name, spec: *svc.Spec.DeepCopy()}
	ref := svc.Spec.Service
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	found, ok := a.cfg.Resolve(ref.Namespace, ref.Name, port)
	if !ok {
		b.setState(false, "ServiceNotFound", fmt.Sprintf("service/%s in %q is not present", ref.Name, ref.Namespace), nil)
		return b
	}
	u, err := url.Parse(found.URL)
	if err != nil {
		b.setState(false, "ServiceAccessError", fmt.Sprintf("service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err), nil)
		return b
	}
	b.url, b.token = u, found.Token
	b.proxy = newProxy(u, found.Token)
	b.setState(false, "FailedDiscoveryCheck", "not checked yet", nil)
	return b
}

func (a *Aggregator) kickCheck() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// checkLoop checks every backend's discovery now and then, as kube's
// available-condition controller does, and records the result.
func (a *Aggregator) checkLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
		}
		listed := a.listed.Load()
		a.checkAll(ctx)
		if listed {
			a.checked.Store(true)
		}
		a.openapi.checked(listed)
	}
}

// Synced reports whether the stored APIServices have been read and handed
// on at least once (kube's start-kube-aggregator-informers and
// apiservice-registration-controller hooks).
func (a *Aggregator) Synced() bool { return a.listed.Load() }

// Checked reports whether every APIService's availability has been checked
// and recorded at least once (kube's apiservice-status-*-available-controller
// hooks).
func (a *Aggregator) Checked() bool { return a.checked.Load() }

func (a *Aggregator) checkAll(ctx context.Context) {
	a.mu.RLock()
	backends := make([]*backend, 0, len(a.backends))
	for _, b := range a.backends {
		backends = append(backends, b)
	}
	local := []string{}
	for name, svc := range a.services {
		if svc.Spec.Service == nil {
			local = append(local, name)
		}
	}
	a.mu.RUnlock()
	for _, b := range backends {
		if b.url != nil {
			b.check(ctx)
		}
		a.writeAvailable(ctx, b.name, b.condition())
	}
	for _, name := range local {
		a.writeAvailable(ctx, name, helper.NewLocalAvailableAPIServiceCondition())
	}
}

// writeAvailable records an APIService's Available condition when it changed.
func (a *Aggregator) writeAvailable(ctx context.Context, name string, cond apiregistrationv1.APIServiceCondition) {
	key := storage.Key{Name: name}
	// Read first: an unchanged condition is no write at all, so no trace.
	cur, err := a.store.Get(ctx, key, "")
	if err == nil && hasCondition(cur.(*apiregistrationv1.APIService), cond) {
		return
	}
	if err == nil {
		_, err = a.store.Update(ctx, key, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			svc := cur.(*apiregistrationv1.APIService)
			if hasCondition(svc, cond) {
				return nil, errUnchanged
			}
			next := svc.DeepCopy()
			helper.SetAPIServiceCondition(next, cond)
			return next, nil
		}), registry.UpdateOptions{Subresource: "status", FieldManager: fieldManager})
	}
	if err != nil && !errors.Is(err, errUnchanged) && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		a.cfg.Logger.Warn("writing an APIService's status", "name", name, "err", err)
	}
}

var errUnchanged = errors.New("unchanged")

// fieldManager is the manager of what the aggregator writes itself:
// kube-apiserver's, where it runs.
const fieldManager = registry.APIServerFieldManager

func hasCondition(svc *apiregistrationv1.APIService, cond apiregistrationv1.APIServiceCondition) bool {
	for _, c := range svc.Status.Conditions {
		if c.Type == cond.Type && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return true
		}
	}
	return false
}
