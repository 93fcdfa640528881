package storage_test

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/storage"
)

func podCodec(t testing.TB) *storage.ProtobufCodec {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return storage.NewProtobufCodec(scheme, corev1.SchemeGroupVersion)
}

// FuzzProtobufCodecDecode: whatever bytes sit under a key in etcd (another
// writer, a truncated value, a bit flip), decoding them returns an error
// or an object, never panics; an object it returns encodes and decodes
// back to the same object.
func FuzzProtobufCodecDecode(f *testing.F) {
	codec := podCodec(f)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"},
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	good, err := codec.Encode(pod)
	if err != nil {
		f.Fatal(err)
	}
	cm, err := codec.Encode(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(cm)
	f.Add([]byte("k8s\x00"))
	f.Add([]byte("k8s\x00\xff\xff\xff\xff\x0f"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got corev1.Pod
		if err := codec.Decode(data, &got); err != nil {
			return
		}
		if !bytes.HasPrefix(data, storage.ProtobufPrefix) {
			t.Fatalf("decoded a value without the %q prefix: %q", storage.ProtobufPrefix, data)
		}
		again, err := codec.Encode(&got)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode the result: %v", data, err)
		}
		var back corev1.Pod
		if err := codec.Decode(again, &back); err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if !equality.Semantic.DeepEqual(&got, &back) {
			t.Fatalf("round trip changed the object:\n%#v\n%#v", &got, &back)
		}
	})
}

// FuzzJSONCodecDecode: a custom resource's value is either refused or
// decodes to an object with apiVersion and kind that encodes again.
func FuzzJSONCodecDecode(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"lab.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"n":1}}`,
		`{"apiVersion":"lab.example.com/v1","kind":"Widget","spec":{"n":1e400}}`,
		`{"apiVersion":"lab.example.com/v1","kind":"WidgetList","items":[{}]}`,
		`{"kind":"Widget"}`, `[]`, `null`, "k8s\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var codec storage.JSONCodec
		u := &unstructured.Unstructured{}
		if err := codec.Decode(data, u); err != nil {
			return
		}
		if u.GetKind() == "" {
			t.Fatalf("decoded %q to an object without kind", data)
		}
		if _, err := codec.Encode(u); err != nil {
			t.Fatalf("decoded %q but cannot encode it again: %v", data, err)
		}
	})
}
