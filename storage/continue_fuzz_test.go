package storage_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/storage"
)

// FuzzDecodeContinue: any continue token a client sends is either refused
// as a 400 (CodeInvalidRequest) or resumes at a key under the list's prefix
// that no ".." can lift out of it, and a token that decodes encodes back to
// one that decodes to the same place.
func FuzzDecodeContinue(f *testing.F) {
	const prefix = "/registry/pods/internals-demo/"
	good, err := storage.EncodeContinue(prefix+"ssa-demo\x00", prefix, 42)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		good, "", "zzz", "e30",
		b64(`{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":7,"start":"../other/x"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":7,"start":"/../../secrets/x"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":7,"start":"a/./b"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":9223372036854775807,"start":"a"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":1e400,"start":"a"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":7,"start":"\u0000"}`),
		b64(`{"v":"meta.k8s.io/v2","rv":7,"start":"a"}`),
		b64(`{"v":"meta.k8s.io/v1","rv":7,"start":"a","start":"../b"}`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		key, rv, err := storage.DecodeContinue(token, prefix)
		if err != nil {
			if !storage.IsCode(err, storage.CodeInvalidRequest) {
				t.Fatalf("DecodeContinue(%q): %v is not an invalid-request error", token, err)
			}
			if st := err.(*storage.Error).Status(); st.Code != 400 || st.Reason == "" {
				t.Fatalf("DecodeContinue(%q): Status %+v, want a 400 with a reason", token, st)
			}
			return
		}
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			t.Fatalf("DecodeContinue(%q) = %q, outside %q", token, key, prefix)
		}
		for _, seg := range strings.Split(rest, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("DecodeContinue(%q) = %q: a %q segment walks out of the prefix", token, key, seg)
			}
		}
		if rv == 0 || rv < -1 {
			t.Fatalf("DecodeContinue(%q): revision %d", token, rv)
		}
		if rest == "" {
			return // start "/" resumes at the list's start, as in kube-apiserver; no server issues it
		}
		again, err := storage.EncodeContinue(key, prefix, rv)
		if err != nil {
			t.Fatalf("EncodeContinue(%q, %d): %v", key, rv, err)
		}
		key2, rv2, err := storage.DecodeContinue(again, prefix)
		if err != nil || key2 != key || rv2 != rv {
			t.Fatalf("round trip of %q: %q %d %v, want %q %d", token, key2, rv2, err, key, rv)
		}
	})
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
