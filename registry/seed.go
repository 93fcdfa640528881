package registry

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/storage"
)

// Seed is one object kubelab makes itself (the lesson's demo, a student's
// namespace, kube-apiserver's system objects): its manifest, JSON or
// YAML, created as a client's would be or, with Apply, server-side
// applied by FieldManager, so that the stored object and its
// managedFields are what the same request makes on a real cluster.
type Seed struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Manifest  string
	Apply     bool
	// FieldManager records who set the object's fields.
	FieldManager string
}

// Make makes each seed in order, as ctx's user (see WithUser). An object
// that exists already (another replica, or an earlier attempt, made it)
// is left alone, so making can be retried.
func (reg *Registry) Make(ctx context.Context, seeds []Seed) error {
	for _, sd := range seeds {
		err := reg.make(ctx, sd)
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("making %s in %q: %w", sd.Resource.Resource, sd.Namespace, err)
		}
	}
	return nil
}

func (reg *Registry) make(ctx context.Context, sd Seed) error {
	s, ok := reg.Store(sd.Resource)
	if !ok {
		return fmt.Errorf("%s is not served", sd.Resource)
	}
	data, err := yaml.YAMLToJSON([]byte(sd.Manifest))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if sd.Apply {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		// apimachinery's json keeps integers int64, as schemas expect.
		if err := utiljson.Unmarshal(data, &u.Object); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		_, _, err := s.Apply(ctx, storage.Key{Namespace: sd.Namespace, Name: u.GetName()}, u, PatchOptions{FieldManager: sd.FieldManager})
		return err
	}
	obj, err := decodeJSON(s.Resource, data)
	if err != nil {
		return err
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() == "" {
		m.SetNamespace(sd.Namespace)
	}
	_, err = s.Create(ctx, obj, CreateOptions{FieldManager: sd.FieldManager})
	return err
}
