package inspect_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/inspect"
)

func typeOf(apiVersion, kind string) reflect.Type {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	obj, err := scheme.Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	return reflect.TypeOf(obj)
}

func encodedPod(t testing.TB) []byte {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ssa-demo", Namespace: "internals-demo", ResourceVersion: "963",
			Labels: map[string]string{"app": "ssa-demo"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "manager-a", Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}}}}`)}}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
	b, err := storage.NewProtobufCodec(scheme.Scheme, corev1.SchemeGroupVersion).Encode(pod)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// find walks names from the top fields, e.g. "raw", "metadata", "name".
func find(fields []inspect.Field, names ...string) *inspect.Field {
	for i := range fields {
		if fields[i].Name != names[0] {
			continue
		}
		if len(names) == 1 {
			return &fields[i]
		}
		if f := find(fields[i].Children, names[1:]...); f != nil {
			return f
		}
	}
	return nil
}

func TestDecode(t *testing.T) {
	data := encodedPod(t)
	v, err := inspect.Decode(data, typeOf)
	if err != nil {
		t.Fatal(err)
	}
	if v.PrefixLen != 4 || v.APIVersion != "v1" || v.Kind != "Pod" {
		t.Fatalf("envelope: prefix %d, %q %q", v.PrefixLen, v.APIVersion, v.Kind)
	}
	t.Run("OK names and offsets", func(t *testing.T) {
		for _, c := range []struct {
			path []string
			want string
		}{
			{[]string{"raw", "metadata", "name"}, `"ssa-demo"`},
			{[]string{"raw", "metadata", "namespace"}, `"internals-demo"`},
			{[]string{"raw", "metadata", "labels", "value"}, `"ssa-demo"`},
			{[]string{"raw", "metadata", "managedFields", "manager"}, `"manager-a"`},
			{[]string{"raw", "spec", "containers", "image"}, `"nginx:1.27"`},
		} {
			f := find(v.Fields, c.path...)
			if f == nil || f.Value == nil {
				t.Fatalf("%v: not found in %+v", c.path, v.Fields)
			}
			if *f.Value != c.want {
				t.Errorf("%v = %s, want %s", c.path, *f.Value, c.want)
			}
			// The field's bytes hold the value: a view marks the right bytes.
			if !bytes.Contains(data[f.Start:f.End], []byte(strings.Trim(c.want, `"`))) {
				t.Errorf("%v: bytes [%d,%d) = %q", c.path, f.Start, f.End, data[f.Start:f.End])
			}
		}
		fv := find(v.Fields, "raw", "metadata", "managedFields", "fieldsV1", "Raw")
		if fv == nil || !strings.Contains(*fv.Value, `f:containers`) {
			t.Errorf("managedFields' FieldsV1 not decoded: %+v", fv)
		}
	})
	t.Run("OK without types", func(t *testing.T) {
		v, err := inspect.Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind != "Pod" || find(v.Fields, "raw") == nil {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("ErrNotProtobuf", func(t *testing.T) {
		if _, err := inspect.Decode([]byte(`{"kind":"Widget"}`), typeOf); err != inspect.ErrNotProtobuf {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrTruncated", func(t *testing.T) {
		v, err := inspect.Decode(data[:len(data)/2], typeOf)
		if err == nil {
			t.Fatal("a truncated value decoded without error")
		}
		if v.Kind != "Pod" {
			t.Errorf("what decoded before the error was lost: %+v", v)
		}
	})
}

func checkRanges(t *testing.T, fields []inspect.Field, lo, hi int) {
	for _, f := range fields {
		if f.Start < lo || f.End > hi || f.Start >= f.End {
			t.Fatalf("field %d [%d,%d) outside [%d,%d)", f.Num, f.Start, f.End, lo, hi)
		}
		checkRanges(t, f.Children, f.Start, f.End)
	}
}

// FuzzDecode: any bytes decode without panicking, into fields that lie
// inside the value and inside their parents.
func FuzzDecode(f *testing.F) {
	f.Add(encodedPod(f))
	f.Add([]byte("k8s\x00"))
	f.Add([]byte("k8s\x00\x0a\x02\x0a\x00\x12\x03\x0a\x01\x08"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _ := inspect.Decode(data, typeOf)
		checkRanges(t, v.Fields, 0, len(data))
	})
}
