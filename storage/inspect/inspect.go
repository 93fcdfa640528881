// Package inspect decodes the values kube-apiserver (and kubelab) store in
// etcd: the "k8s\x00" prefix, the runtime.Unknown envelope that names the
// object's apiVersion and kind, and every protobuf field of the object, with
// field names taken from the Go types' `protobuf:"..."` struct tags. It
// only reads bytes; it never needs a schema file or generated descriptors.
package inspect

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Prefix starts every protobuf value Kubernetes stores.
var Prefix = []byte("k8s\x00")

// maxDepth bounds nesting, so that hostile bytes cannot recurse without end.
const maxDepth = 48

// maxValue is how much of a string or bytes field is shown.
const maxValue = 240

// Field is one decoded protobuf field. Start and End are byte offsets in
// the whole value (tag included), so a view can mark the field's bytes.
type Field struct {
	Num      int     `json:"num"`
	Name     string  `json:"name,omitempty"`
	Wire     string  `json:"wire"`
	Start    int     `json:"start"`
	End      int     `json:"end"`
	Value    *string `json:"value,omitempty"`
	Children []Field `json:"children,omitempty"`
}

// Value is a decoded etcd value.
type Value struct {
	// PrefixLen is 4 when the value starts with Prefix, else 0 (JSON, say).
	PrefixLen  int
	APIVersion string
	Kind       string
	// Fields are the runtime.Unknown envelope's; its raw field's children
	// are the object's own fields.
	Fields []Field
}

// TypeOf resolves an apiVersion and kind to the object's Go type, or nil.
type TypeOf func(apiVersion, kind string) reflect.Type

// ErrNotProtobuf is returned for a value without the k8s\x00 prefix.
var ErrNotProtobuf = errors.New("not a Kubernetes protobuf value: no k8s\\x00 prefix")

// Decode decodes a stored value. Whatever it returns alongside an error is
// what could be decoded before the error.
func Decode(data []byte, typeOf TypeOf) (*Value, error) {
	if !bytes.HasPrefix(data, Prefix) {
		return &Value{}, ErrNotProtobuf
	}
	v := &Value{PrefixLen: len(Prefix)}
	fields, err := decode(data, len(Prefix), envelope, 0)
	v.Fields = fields
	for _, f := range fields {
		if f.Num == 1 { // typeMeta
			for _, c := range f.Children {
				if c.Value != nil && c.Num == 1 {
					v.APIVersion = unquote(*c.Value)
				} else if c.Value != nil && c.Num == 2 {
					v.Kind = unquote(*c.Value)
				}
			}
		}
	}
	if err != nil {
		return v, err
	}
	// Now the object inside raw, named by its Go type.
	var t reflect.Type
	if typeOf != nil {
		t = typeOf(v.APIVersion, v.Kind)
	}
	for i := range v.Fields {
		f := &v.Fields[i]
		if f.Num != 2 {
			continue
		}
		start, end, ok := payload(data, f)
		if !ok {
			continue
		}
		children, err := decode(data[:end], start, messageOf(t), 1)
		f.Children, f.Value = children, nil
		if err != nil {
			return v, fmt.Errorf("raw: %w", err)
		}
	}
	return v, nil
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// payload is where a length-delimited field's content lies in data.
func payload(data []byte, f *Field) (int, int, bool) {
	_, _, n := protowire.ConsumeTag(data[f.Start:f.End])
	if n < 0 {
		return 0, 0, false
	}
	_, m := protowire.ConsumeVarint(data[f.Start+n : f.End])
	if m < 0 {
		return 0, 0, false
	}
	return f.Start + n + m, f.End, true
}

// decode reads the fields of one message that occupies data[start:].
func decode(data []byte, start int, msg *message, depth int) ([]Field, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	var out []Field
	for off := start; off < len(data); {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return out, fmt.Errorf("offset %d: %w", off, protowire.ParseError(n))
		}
		f := Field{Num: int(num), Start: off, Wire: wireName(typ)}
		info := msg.field(num)
		f.Name = info.name
		body := off + n
		switch typ {
		case protowire.VarintType:
			x, m := protowire.ConsumeVarint(data[body:])
			if m < 0 {
				return out, fmt.Errorf("offset %d: %w", body, protowire.ParseError(m))
			}
			f.End = body + m
			f.Value = str(varintString(x, info.kind))
		case protowire.Fixed32Type:
			x, m := protowire.ConsumeFixed32(data[body:])
			if m < 0 {
				return out, fmt.Errorf("offset %d: %w", body, protowire.ParseError(m))
			}
			f.End = body + m
			if info.kind == reflect.Float32 {
				f.Value = str(strconv.FormatFloat(float64(math.Float32frombits(x)), 'g', -1, 32))
			} else {
				f.Value = str(strconv.FormatUint(uint64(x), 10))
			}
		case protowire.Fixed64Type:
			x, m := protowire.ConsumeFixed64(data[body:])
			if m < 0 {
				return out, fmt.Errorf("offset %d: %w", body, protowire.ParseError(m))
			}
			f.End = body + m
			if info.kind == reflect.Float64 {
				f.Value = str(strconv.FormatFloat(math.Float64frombits(x), 'g', -1, 64))
			} else {
				f.Value = str(strconv.FormatUint(x, 10))
			}
		case protowire.BytesType:
			b, m := protowire.ConsumeBytes(data[body:])
			if m < 0 {
				return out, fmt.Errorf("offset %d: %w", body, protowire.ParseError(m))
			}
			f.End = body + m
			contentStart := f.End - len(b)
			switch {
			case info.msg != nil:
				children, err := decode(data[:f.End], contentStart, info.msg, depth+1)
				f.Children = children
				if err != nil {
					out = append(out, f)
					return out, err
				}
			case info.kind == reflect.String || (info.kind == reflect.Invalid && printable(b)):
				f.Value = str(quote(b))
			case info.kind == reflect.Invalid && len(b) > 0:
				// No type to go by: a message if it parses as one, else bytes.
				if children, err := decode(data[:f.End], contentStart, nil, depth+1); err == nil {
					f.Children = children
				} else {
					f.Value = str(quote(b))
				}
			default:
				f.Value = str(quote(b))
			}
		case protowire.StartGroupType:
			m := protowire.ConsumeFieldValue(num, typ, data[body:])
			if m < 0 {
				return out, fmt.Errorf("offset %d: %w", body, protowire.ParseError(m))
			}
			f.End = body + m
		default:
			return out, fmt.Errorf("offset %d: unexpected wire type %d", off, typ)
		}
		out = append(out, f)
		off = f.End
	}
	return out, nil
}

func str(s string) *string { return &s }

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}

func quote(b []byte) string {
	s := strconv.Quote(string(b))
	if len(s) > maxValue {
		return s[:maxValue] + "…(" + strconv.Itoa(len(b)) + " bytes)"
	}
	return s
}

func varintString(x uint64, k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return strconv.FormatBool(x != 0)
	case reflect.Int32, reflect.Int, reflect.Int64, reflect.Int16, reflect.Int8:
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatUint(x, 10)
}

func wireName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "bytes"
	case protowire.StartGroupType:
		return "group"
	}
	return "wire" + strconv.Itoa(int(t))
}

// message names a message's fields; nil knows no names.
type message struct {
	fields map[protowire.Number]fieldInfo
}

type fieldInfo struct {
	name string
	kind reflect.Kind // the scalar kind, or Invalid when unknown
	msg  *message     // set for message-typed fields
}

func (m *message) field(n protowire.Number) fieldInfo {
	if m == nil {
		return fieldInfo{}
	}
	return m.fields[n]
}

// envelope is runtime.Unknown, the wrapper of every stored object.
var envelope = &message{fields: map[protowire.Number]fieldInfo{
	1: {name: "typeMeta", msg: &message{fields: map[protowire.Number]fieldInfo{
		1: {name: "apiVersion", kind: reflect.String}, 2: {name: "kind", kind: reflect.String}}}},
	2: {name: "raw", kind: reflect.Slice},
	3: {name: "contentEncoding", kind: reflect.String},
	4: {name: "contentType", kind: reflect.String},
}}

// timestamp is how metav1.Time and MicroTime travel: they have no tags.
var timestamp = &message{fields: map[protowire.Number]fieldInfo{
	1: {name: "seconds", kind: reflect.Int64}, 2: {name: "nanos", kind: reflect.Int32}}}

// messageOf builds the field names of a Go struct type from its tags.
func messageOf(t reflect.Type) *message {
	return messageOfSeen(t, map[reflect.Type]*message{})
}

func messageOfSeen(t reflect.Type, seen map[reflect.Type]*message) *message {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if m, ok := seen[t]; ok {
		return m
	}
	m := &message{fields: map[protowire.Number]fieldInfo{}}
	seen[t] = m
	tagged := false
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("protobuf")
		if tag == "" {
			continue
		}
		tagged = true
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			continue
		}
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		info := fieldInfo{name: tagName(parts, sf.Name)}
		ft := sf.Type
		if ft.Kind() == reflect.Map {
			info.msg = mapEntry(sf, seen)
		} else {
			info.kind, info.msg = elemInfo(ft, seen)
		}
		m.fields[protowire.Number(num)] = info
	}
	if !tagged && (t.Name() == "Time" || t.Name() == "MicroTime") {
		return timestamp
	}
	return m
}

func tagName(parts []string, fallback string) string {
	for _, p := range parts[2:] {
		if name, ok := strings.CutPrefix(p, "name="); ok {
			return name
		}
	}
	return fallback
}

// elemInfo is what a field of type t holds: a scalar kind or a message.
func elemInfo(t reflect.Type, seen map[reflect.Type]*message) (reflect.Kind, *message) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 {
		t = t.Elem()
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	if t.Kind() == reflect.Struct {
		return reflect.Struct, messageOfSeen(t, seen)
	}
	return t.Kind(), nil
}

// mapEntry is the message a map field's entries are sent as: key = 1, value = 2.
func mapEntry(sf reflect.StructField, seen map[reflect.Type]*message) *message {
	kk, km := elemInfo(sf.Type.Key(), seen)
	vk, vm := elemInfo(sf.Type.Elem(), seen)
	return &message{fields: map[protowire.Number]fieldInfo{
		1: {name: "key", kind: kk, msg: km},
		2: {name: "value", kind: vk, msg: vm},
	}}
}
