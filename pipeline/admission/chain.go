// Package admission runs admission plugins as kube-apiserver does:
// mutating plugins first (they may change the object), then, after the
// API's own validation, validating plugins (they may only refuse). Each
// plugin run leaves a trace record; a mutation's record carries the JSON
// patch it made, which is what the lesson's pipeline view shows.
package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/wI2L/jsondiff"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubelab/kubelab/pipeline"
)

// MutatingPlugin may change a.Object (in place) or refuse the request.
type MutatingPlugin interface {
	Name() string
	Admit(ctx context.Context, a *pipeline.Attributes) error
}

// ValidatingPlugin may refuse the request; it must not change a.Object.
type ValidatingPlugin interface {
	Name() string
	Validate(ctx context.Context, a *pipeline.Attributes) error
}

// ReadOnly is implemented by a MutatingPlugin that never changes the
// object: it runs in the mutating phase only for its place in the order
// (as NamespaceLifecycle does in kube), so the chain skips encoding the
// object around it.
type ReadOnly interface {
	ReadOnly()
}

// Describing is implemented by a MutatingPlugin that reports its own
// change as RFC 6902 operations. The chain then need not encode the object
// before and after the plugin to diff them, which is most of what
// admission costs. The operations must be exactly the plugin's change:
// each such plugin has a test that applies them to the object before and
// compares the result with the object after.
type Describing interface {
	AdmitDescribed(ctx context.Context, a *pipeline.Attributes) ([]PatchOp, error)
}

// PatchOp is one RFC 6902 operation.
type PatchOp struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes "op" and "path" first, as RFC 6902's examples do, and
// "value" for the operations that have one (even when it is zero).
func (o PatchOp) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"op":`)
	writeJSON(&b, o.Op)
	b.WriteString(`,"path":`)
	writeJSON(&b, o.Path)
	if o.Op == "add" || o.Op == "replace" || o.Op == "test" {
		b.WriteString(`,"value":`)
		if err := writeJSONValue(&b, o.Value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Chain is the admission stage: its plugins, in order.
type Chain struct {
	Mutating   []MutatingPlugin
	Validating []ValidatingPlugin
}

var _ pipeline.Admission = (*Chain)(nil)

// Admit runs the mutating plugins in order, recording each: "mutate" with
// the RFC 6902 patch from the object before to the object after, "allow"
// if it changed nothing, "deny"/"error" if it refused, which stops the
// chain and is returned.
func (c *Chain) Admit(ctx context.Context, a *pipeline.Attributes) ([]pipeline.Record, error) {
	records := make([]pipeline.Record, 0, len(c.Mutating))
	var before []byte
	for _, p := range c.Mutating {
		sw := pipeline.StartStage(pipeline.StageMutatingAdmission, p.Name())
		if _, ok := p.(ReadOnly); ok {
			err := p.Admit(ctx, a)
			records = append(records, sw.Done(err))
			if err != nil {
				return records, err
			}
			continue
		}
		if d, ok := p.(Describing); ok {
			ops, err := d.AdmitDescribed(ctx, a)
			if err != nil {
				return append(records, sw.Done(err)), err
			}
			rec := sw.Record(pipeline.Allow, "")
			if len(ops) > 0 {
				if rec.Patch, err = json.Marshal(ops); err != nil {
					return records, apierrors.NewInternalError(fmt.Errorf("admission: encoding the change %s made: %w", p.Name(), err))
				}
				rec.Decision, rec.Reason = pipeline.Mutate, "changed the object"
				before = nil // stale now: a diffing plugin after this one encodes afresh
			}
			records = append(records, rec)
			continue
		}
		if before == nil && a.Object != nil {
			var err error
			if before, err = json.Marshal(a.Object); err != nil {
				return records, apierrors.NewInternalError(fmt.Errorf("admission: encoding the object: %w", err))
			}
		}
		if err := p.Admit(ctx, a); err != nil {
			return append(records, sw.Done(err)), err
		}
		decision, reason, patch := pipeline.Allow, "", json.RawMessage(nil)
		if a.Object != nil {
			after, err := json.Marshal(a.Object)
			if err != nil {
				return records, apierrors.NewInternalError(fmt.Errorf("admission: encoding the object after %s: %w", p.Name(), err))
			}
			if !bytes.Equal(before, after) {
				if patch, err = jsonPatch(before, after); err != nil {
					return records, apierrors.NewInternalError(fmt.Errorf("admission: diffing the change %s made: %w", p.Name(), err))
				}
				decision, reason = pipeline.Mutate, "changed the object"
			}
			before = after
		}
		rec := sw.Record(decision, reason)
		rec.Patch = patch
		records = append(records, rec)
	}
	return records, nil
}

// Validate runs the validating plugins in order, recording each; the first
// refusal stops the chain and is returned.
func (c *Chain) Validate(ctx context.Context, a *pipeline.Attributes) ([]pipeline.Record, error) {
	records := make([]pipeline.Record, 0, len(c.Validating))
	for _, p := range c.Validating {
		sw := pipeline.StartStage(pipeline.StageValidatingAdmission, p.Name())
		err := p.Validate(ctx, a)
		records = append(records, sw.Done(err))
		if err != nil {
			return records, err
		}
	}
	return records, nil
}

// jsonPatch is the RFC 6902 patch turning before into after. jsondiff
// compares arrays element by element and emits the fewest operations,
// which keeps a plugin's patch readable (one "add" per field it set).
func jsonPatch(before, after []byte) (json.RawMessage, error) {
	p, err := jsondiff.CompareJSON(before, after)
	if err != nil {
		return nil, err
	}
	// Written out by hand to put "op" and "path" first, as RFC 6902's
	// examples (and kubectl's patches) do; jsondiff puts "value" first.
	var b bytes.Buffer
	b.WriteByte('[')
	for i, op := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"op":`)
		writeJSON(&b, op.Type)
		b.WriteString(`,"path":`)
		writeJSON(&b, op.Path)
		switch op.Type {
		case jsondiff.OperationMove, jsondiff.OperationCopy:
			b.WriteString(`,"from":`)
			writeJSON(&b, op.From)
		case jsondiff.OperationAdd, jsondiff.OperationReplace, jsondiff.OperationTest:
			b.WriteString(`,"value":`)
			if err := writeJSONValue(&b, op.Value); err != nil {
				return nil, err
			}
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always encodes
	b.Write(enc)
}

func writeJSONValue(b *bytes.Buffer, v any) error {
	enc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(enc)
	return nil
}

// NewForbidden is kube's admission refusal: 403 Forbidden naming the
// object, `pods "web" is forbidden: <err>`. Before a generated name
// exists, the name is the generateName prefix, or "Unknown".
func NewForbidden(a *pipeline.Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := a.Name
	if name == "" {
		name = "Unknown"
		if m, merr := meta.Accessor(a.Object); a.Object != nil && merr == nil {
			if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.GroupResource(), name, err)
}
