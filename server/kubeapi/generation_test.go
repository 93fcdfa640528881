package kubeapi_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubelab/kubelab/internal/apitest"
)

// TestGenerationWhereKubeKeepsIt: a Deployment starts at generation 1 and
// counts spec changes, not metadata or status ones; a ConfigMap, as on a
// cluster, has no generation at all.
func TestGenerationWhereKubeKeepsIt(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	cs := lab.Clientset(t)
	ctx := context.Background()

	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "2"
	if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm.Generation != 0 {
		t.Errorf("ConfigMap generation %d after create and update, want none", cm.Generation)
	}

	labels := map[string]string{"app": "web"}
	d, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Fatalf("new Deployment generation %d, want 1", d.Generation)
	}
	d.Labels = map[string]string{"touched": "yes"}
	if d, err = cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Fatalf("generation %d after a label change, want still 1", d.Generation)
	}
	d.Spec.Replicas = ptr.To[int32](3)
	if d, err = cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Generation != 2 {
		t.Fatalf("generation %d after a spec change, want 2", d.Generation)
	}
}
