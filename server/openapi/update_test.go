package openapi

import (
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestTypeConverter(t *testing.T) {
	s, err := New(labResources(), Info{})
	if err != nil {
		t.Fatal(err)
	}
	tc := s.TypeConverter()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "nginx", Image: "nginx:1.27",
			Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
		}}},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"k": "v"}}

	t.Run("OK", func(t *testing.T) {
		for name, obj := range map[string]runtime.Object{"Pod": pod, "UnstructuredPod": &unstructured.Unstructured{Object: content}, "ConfigMap": cm} {
			typed, err := tc.ObjectToTyped(obj)
			if err != nil {
				t.Errorf("%s: ObjectToTyped: %v", name, err)
				continue
			}
			if _, err := tc.TypedToObject(typed); err != nil {
				t.Errorf("%s: TypedToObject: %v", name, err)
			}
		}
		// Containers merge by name: the schema's list-map keys survived, which
		// is what makes server-side apply merge rather than replace lists.
		typed, err := tc.ObjectToTyped(pod)
		if err != nil {
			t.Fatal(err)
		}
		set, err := typed.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		image := fieldpath.MakePathOrDie("spec", "containers", fieldpath.KeyByFields("name", "nginx"), "image")
		if !set.Has(image) {
			t.Errorf("field set lacks %v:\n%v", image, set)
		}
	})
	t.Run("ErrNotServed", func(t *testing.T) {
		d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
		if _, err := tc.ObjectToTyped(d); err == nil {
			t.Error("a kind that is not served converted")
		}
	})
}

func TestUpdate(t *testing.T) {
	s, srv := serve(t, labResources())
	status := func(path string) int {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if err := s.Update(append(labResources(), deployments)); err != nil {
		t.Fatalf("Update: %v", err)
	}
	d := getDiscovery(t, srv)
	if _, ok := d.Paths["apis/apps/v1"]; !ok {
		t.Errorf("apps/v1 not listed after Update: %v", d.Paths)
	}
	doc := getV3(t, srv, "apis/apps/v1")
	if err := supportsFieldValidation(doc, appsv1.SchemeGroupVersion.WithKind("Deployment")); err != nil {
		t.Error(err)
	}
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	if _, err := s.TypeConverter().ObjectToTyped(dep); err != nil {
		t.Errorf("Deployment after Update: %v", err)
	}
	_, v2 := get(t, srv, "/openapi/v2", "application/json")
	if !strings.Contains(string(v2), `"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"`) {
		t.Error("v2 lacks the deployments/scale path after Update")
	}

	if err := s.Update([]Resource{{GroupVersion: schema.GroupVersion{Version: "v1"}, Resource: "pods"}}); err == nil {
		t.Fatal("Update accepted an invalid resource")
	}
	if got := status("/openapi/v3/apis/apps/v1"); got != http.StatusOK {
		t.Errorf("a failed Update changed what is served: apps/v1 %d", got)
	}

	if err := s.Update(labResources()); err != nil {
		t.Fatal(err)
	}
	if _, ok := getDiscovery(t, srv).Paths["apis/apps/v1"]; ok {
		t.Error("apps/v1 still listed after it was removed")
	}
	if got := status("/openapi/v3/apis/apps/v1"); got != http.StatusNotFound {
		t.Errorf("removed group version: %d, want 404", got)
	}
}

func TestNewErrors(t *testing.T) {
	core := schema.GroupVersion{Version: "v1"}
	pods := func(edit func(*Resource)) []Resource {
		r := Resource{GroupVersion: core, Resource: "pods", Kind: "Pod", Namespaced: true, Verbs: allVerbs, Object: &corev1.Pod{}, List: &corev1.PodList{}}
		edit(&r)
		return []Resource{r}
	}
	for name, resources := range map[string][]Resource{
		"ErrNoKind":          pods(func(r *Resource) { r.Kind = "" }),
		"ErrNoObject":        pods(func(r *Resource) { r.Object = nil }),
		"ErrNoList":          pods(func(r *Resource) { r.List = nil }),
		"ErrUnknownVerb":     pods(func(r *Resource) { r.Verbs = []string{"get", "proxy"} }),
		"ErrWrongKind":       pods(func(r *Resource) { r.Kind = "ConfigMap" }),
		"ErrWrongList":       pods(func(r *Resource) { r.List = &corev1.ConfigMapList{} }),
		"ErrNotAKind":        pods(func(r *Resource) { r.Object = &metav1.Status{} }),
		"ErrNoDefinition":    pods(func(r *Resource) { r.Object = &unstructured.Unstructured{} }),
		"ErrSubresource":     pods(func(r *Resource) { r.Subresources = []string{"exec"} }),
		"ErrUpperCase":       pods(func(r *Resource) { r.Resource = "Pods" }),
		"ErrDuplicate":       append(labResources(), labResources()[1]),
		"ErrSlashInResource": pods(func(r *Resource) { r.Resource = "pods/status" }),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(resources, Info{}); err == nil {
				t.Error("New accepted it")
			} else {
				t.Log(err)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		if _, err := New(nil, Info{}); err != nil {
			t.Errorf("no resources: %v", err)
		}
	})
}

// TestUpdateWhileServing runs Updates while clients read every document
// and the type converter; run with -race it checks that a rebuild never
// touches what is being served.
func TestUpdateWhileServing(t *testing.T) {
	s, srv := serve(t, labResources())
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 0; i < 4; i++ {
			set := labResources()
			if i%2 == 0 {
				set = append(set, deployments)
			}
			if err := s.Update(set); err != nil {
				errs <- err
				return
			}
		}
	}()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	for {
		select {
		case <-done:
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			return
		default:
		}
		get(t, srv, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
		getV3(t, srv, "api/v1")
		if _, err := s.TypeConverter().ObjectToTyped(pod); err != nil {
			t.Fatal(err)
		}
	}
}
