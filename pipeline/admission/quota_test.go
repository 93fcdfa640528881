package admission

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
)

// What a request asks of a quota, under the names kube's quota uses: a
// create counts one object under count/<resource>.<group> (and the legacy
// name, if the resource has one) and its size; an update only its growth.
func TestRequestedUsage(t *testing.T) {
	small := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": string(make([]byte, 1000))}}
	tests := []struct {
		name string
		a    *pipeline.Attributes
		want map[corev1.ResourceName]int64
	}{
		{"OK create of a core kind", &pipeline.Attributes{Operation: pipeline.Create, Resource: "configmaps", Object: small},
			map[corev1.ResourceName]int64{"count/configmaps": 1, corev1.ResourceConfigMaps: 1, StoredBytes: int64(small.Size())}},
		{"OK create in a group", &pipeline.Attributes{Operation: pipeline.Create, APIGroup: "apps", Resource: "deployments", Object: &appsv1.Deployment{}},
			map[corev1.ResourceName]int64{"count/deployments.apps": 1, StoredBytes: int64((&appsv1.Deployment{}).Size())}},
		{"OK update that grows", &pipeline.Attributes{Operation: pipeline.Update, Resource: "configmaps", Object: big, OldObject: small},
			map[corev1.ResourceName]int64{StoredBytes: int64(big.Size() - small.Size())}},
		{"OK update that shrinks", &pipeline.Attributes{Operation: pipeline.Update, Resource: "configmaps", Object: small, OldObject: big},
			map[corev1.ResourceName]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := requestedUsage(tt.a)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for name, n := range tt.want {
				if q, ok := got[name]; !ok || q.Value() != n {
					t.Errorf("%s: got %v, want %d", name, got[name], n)
				}
			}
		})
	}
}

func TestCountedResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]schema.GroupResource{
		"count/configmaps":       {Resource: "configmaps"},
		"count/deployments.apps": {Group: "apps", Resource: "deployments"},
		corev1.ResourcePods:      {Resource: "pods"},
		corev1.ResourceSecrets:   {Resource: "secrets"},
	} {
		if got, ok := countedResource(name); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", name, got, ok, want)
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, "requests.memory", "count/", StoredBytes} {
		if got, ok := countedResource(name); ok {
			t.Errorf("%s counts %v", name, got)
		}
	}
}
