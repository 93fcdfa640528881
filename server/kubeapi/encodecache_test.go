package kubeapi

import (
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestEncodeCacheEncodesOnceOnACopy: watchers that need the same event at
// the same moment share one encoding, and the encoder never touches the
// shared object (encoders write an object's kind while they work, which
// raced between watchers encoding it at once).
func TestEncodeCacheEncodesOnceOnACopy(t *testing.T) {
	t.Parallel()
	c := newEncodeCache()
	shared := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "7"}}
	key := encodeKey{obj: shared, mediaType: runtime.ContentTypeJSON, gv: coreV1}
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	results := make([][]byte, 50)
	for i := range results {
		wg.Go(func() {
			b, err := c.encode(key, func(own runtime.Object) ([]byte, error) {
				calls.Add(1)
				<-release // hold the first encoding until every watcher has asked
				if own == runtime.Object(shared) {
					t.Error("the encoder got the shared object, not a copy")
				}
				own.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
				return []byte("encoded"), nil
			})
			if err != nil {
				t.Error(err)
			}
			results[i] = b
		})
	}
	for c.underway() == 0 { // the first encoding has begun
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("encoded %d times for 50 watchers at once, want 1", n)
	}
	for i, b := range results {
		if string(b) != "encoded" {
			t.Fatalf("watcher %d got %q", i, b)
		}
	}
	if !shared.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatalf("the shared object's kind was written: %v", shared.GetObjectKind().GroupVersionKind())
	}
	if b, _ := c.encode(key, func(runtime.Object) ([]byte, error) { t.Fatal("encoded again"); return nil, nil }); string(b) != "encoded" {
		t.Fatalf("cached: %q", b)
	}
}

// underway counts the encodings under way.
func (c *encodeCache) underway() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.encoding)
}
