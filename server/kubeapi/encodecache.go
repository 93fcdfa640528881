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
	// encoding are the encodings under way: a watcher that needs one waits
	// for it rather than encoding the same object again beside it.
	encoding map[encodeKey]*pendingEncode
	order    []encodeKey // oldest first, for eviction
	next     int
}

type encodeKey struct {
	obj       runtime.Object
	mediaType string
	gv        schema.GroupVersion
	// eventType is set when the cached bytes are a whole watch event.
	eventType watch.EventType
}

type pendingEncode struct {
	done chan struct{}
	b    []byte
	err  error
}

const encodeCacheSize = 4096

func newEncodeCache() *encodeCache {
	return &encodeCache{entries: map[encodeKey][]byte{}, encoding: map[encodeKey]*pendingEncode{}, order: make([]encodeKey, 0, encodeCacheSize)}
}

// encode returns the encoding of key.obj, computing it on first use with
// enc, which gets its own deep copy of the object: an encoder writes the
// object's kind and apiVersion while it works, and the object is shared
// with every watcher (and with those encoding it in another format).
func (c *encodeCache) encode(key encodeKey, enc func(obj runtime.Object) ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if b, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return b, nil
	}
	if p, ok := c.encoding[key]; ok {
		c.mu.Unlock()
		<-p.done
		return p.b, p.err
	}
	p := &pendingEncode{done: make(chan struct{})}
	c.encoding[key] = p
	c.mu.Unlock()

	p.b, p.err = enc(key.obj.DeepCopyObject())
	c.mu.Lock()
	delete(c.encoding, key)
	if p.err == nil {
		c.storeLocked(key, p.b)
	}
	c.mu.Unlock()
	close(p.done)
	return p.b, p.err
}

func (c *encodeCache) storeLocked(key encodeKey, b []byte) {
	if len(c.order) < encodeCacheSize {
		c.order = append(c.order, key)
	} else {
		delete(c.entries, c.order[c.next])
		c.order[c.next] = key
		c.next = (c.next + 1) % encodeCacheSize
	}
	c.entries[key] = b
}
