// Package rootca is the root-CA publisher: every active namespace has a
// ConfigMap named kube-root-ca.crt holding the CA that signs the API
// server's certificates, as kube-controller-manager's publisher of that
// name keeps. Pods read it to trust the API server; the Kubernetes e2e
// suite waits for it in every namespace it creates before a test starts.
package rootca

import (
	"context"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

const (
	// ConfigMapName is the name kube gives the published CA bundle.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey is the ConfigMap key holding the PEM bundle.
	DataKey = "ca.crt"

	descriptionAnnotation = "kubernetes.io/description"
	// description is kube's own wording, so the object reads the same
	// as in any cluster.
	description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// New watches namespaces and ConfigMaps and publishes caPEM in each active
// namespace, putting it back when it is deleted or edited.
func New(namespaces, configMaps *registry.Store, caPEM []byte, log *slog.Logger) *controller.PerNamespace {
	p := &publisher{configMaps: configMaps, caPEM: string(caPEM)}
	return controller.NewPerNamespace("root-ca-publisher", namespaces, configMaps, ConfigMapName, p.publish, log)
}

type publisher struct {
	configMaps *registry.Store
	caPEM      string
}

func (p *publisher) publish(ctx context.Context, namespace string) error {
	key := storage.Key{Namespace: namespace, Name: ConfigMapName}
	want := map[string]string{DataKey: p.caPEM}
	existing, err := p.configMaps.Get(ctx, key, "")
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: ConfigMapName, Namespace: namespace,
				Annotations: map[string]string{descriptionAnnotation: description},
			},
			Data: want,
		}
		_, err = p.configMaps.Create(ctx, cm, registry.CreateOptions{FieldManager: controller.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return nil // someone else made it; its watch event brings us back to check it
		}
		return err
	}
	if err != nil {
		return err
	}
	if published(existing.(*corev1.ConfigMap), want) {
		return nil
	}
	cmUID := existing.(*corev1.ConfigMap).UID
	_, err = p.configMaps.Update(ctx, key, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap).DeepCopy()
		cm.Data, cm.BinaryData = want, nil
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[descriptionAnnotation] = description
		return cm, nil
	}), registry.UpdateOptions{FieldManager: controller.FieldManager, Preconditions: &storage.Preconditions{UID: &cmUID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted or replaced since we read it; its own event queues the namespace again
	}
	return err
}

// published says whether cm already carries exactly the bundle and the
// annotation that describes it.
func published(cm *corev1.ConfigMap, want map[string]string) bool {
	return maps.Equal(cm.Data, want) && len(cm.BinaryData) == 0 && cm.Annotations[descriptionAnnotation] != ""
}
