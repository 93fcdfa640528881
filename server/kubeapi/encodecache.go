package kubeapi

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// encodeCache keeps the encoding of recent watch event objects, so that an
// event fanned out to a thousand watchers is serialized once per format,
// not a thousand times (kube-apiserver's cacher does the same with its
// cachingObject). The watch cache hands every watcher the same object, and
// objects are never modified once stored, so the object itself is the key;
// holding it as the key also keeps its address from being reused.
type encodeCache struct {
	mu      sync.Mutex
	entries map[encodeKey][]byte
	order   []encodeKey // oldest first, for eviction
	next    int
}

type encodeKey struct {
	obj       runtime.Object
	mediaType string
	gv        schema.GroupVersion
	// eventType is set when the cached bytes are a whole watch event.
	eventType watch.EventType
}

const encodeCacheSize = 4096

func newEncodeCache() *encodeCache {
	return &encodeCache{entries: map[encodeKey][]byte{}, order: make([]encodeKey, 0, encodeCacheSize)}
}

// encode returns obj's encoding, computing it with enc on first use.
func (c *encodeCache) encode(key encodeKey, enc func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := enc()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		if len(c.order) < encodeCacheSize {
			c.order = append(c.order, key)
		} else {
			delete(c.entries, c.order[c.next])
			c.order[c.next] = key
			c.next = (c.next + 1) % encodeCacheSize
		}
		c.entries[key] = b
	}
	return b, nil
}
