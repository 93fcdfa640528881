package storage

import (
	"bytes"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// ProtobufPrefix is the magic number in front of every built-in object
// kube-apiserver writes to etcd: "k8s" and a zero byte.
var ProtobufPrefix = []byte("k8s\x00")

// MaxObjectBytes is the largest encoded object storage writes: etcd's
// default --max-request-bytes, 1.5 MiB. A larger one is refused before it
// is sent, rather than failing in etcd or in the client's transport.
const MaxObjectBytes = 3 << 19

// Codec turns objects into etcd values and back.
type Codec interface {
	// Encode returns the etcd value for obj. It must not keep obj.
	Encode(obj runtime.Object) ([]byte, error)
	// Decode fills into from an etcd value.
	Decode(data []byte, into runtime.Object) error
}

// ProtobufCodec stores built-in kinds as kube-apiserver does: the "k8s\x00"
// prefix, then a runtime.Unknown protobuf naming apiVersion and kind, wrapping
// the object's own protobuf. The bytes come from apimachinery's serializer,
// so they are the bytes a real cluster stores.
type ProtobufCodec struct {
	encoder runtime.Encoder
	decoder *protobuf.Serializer
}

var _ Codec = (*ProtobufCodec)(nil)

// NewProtobufCodec stores objects registered in scheme at version gv.
func NewProtobufCodec(scheme *runtime.Scheme, gv schema.GroupVersion) *ProtobufCodec {
	pb := protobuf.NewSerializer(scheme, scheme)
	return &ProtobufCodec{
		encoder: serializer.NewCodecFactory(scheme).EncoderForVersion(pb, gv),
		decoder: pb,
	}
}

// Encode implements Codec.
func (c *ProtobufCodec) Encode(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	if err := c.encoder.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode implements Codec.
func (c *ProtobufCodec) Decode(data []byte, into runtime.Object) error {
	if !bytes.HasPrefix(data, ProtobufPrefix) {
		return fmt.Errorf("value does not start with %q, so it is not a Kubernetes protobuf object", ProtobufPrefix)
	}
	// Given a value of another kind, the serializer decodes into a new
	// object of that kind and leaves into empty: refuse it rather than hand
	// back an empty object as if it were stored.
	obj, gvk, err := c.decoder.Decode(data, nil, into)
	if err != nil {
		return err
	}
	if obj != into {
		return fmt.Errorf("value holds a %s, not a %T", gvk.Kind, into)
	}
	return nil
}

// JSONCodec stores custom resources as plain JSON, as kube-apiserver does,
// which is why etcdctl shows them readable beside a Pod's protobuf.
type JSONCodec struct{}

var _ Codec = JSONCodec{}

// Encode implements Codec.
func (JSONCodec) Encode(obj runtime.Object) ([]byte, error) {
	return runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
}

// Decode implements Codec.
func (JSONCodec) Decode(data []byte, into runtime.Object) error {
	u, ok := into.(*unstructured.Unstructured)
	if !ok {
		return errors.New("custom resources decode into *unstructured.Unstructured")
	}
	_, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, u)
	return err
}
