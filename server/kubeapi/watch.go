package kubeapi

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
)

// defaultWatchTimeout is kube-apiserver's --min-request-timeout: a watch
// without timeoutSeconds ends after 30 to 60 minutes, spread at random so
// that clients do not all reconnect at once.
const defaultWatchTimeout = 30 * time.Minute

// maxEventsPerFlush bounds how many queued events one flush carries.
const maxEventsPerFlush = 64

// watch streams events as they happen: newline-delimited WatchEvent JSON
// (or length-prefixed protobuf), flushed one by one, on one connection.
func (r *request) watch() error {
	s, err := r.startWatch()
	if err != nil {
		return err
	}
	s.run()
	return nil
}

// watchStream is a watch whose response has begun. It holds nothing of
// the request's echo context, which is reused once the handler returns.
type watchStream struct {
	w        watch.Interface
	flush    *http.ResponseController
	enc      *eventEncoder
	timer    *time.Timer
	done     <-chan struct{}
	log      *slog.Logger
	resource string // for the log
}

// startWatch opens the watch and sends the response header. It is a
// function of its own so that its locals are not in the frame that waits
// for events: an idle watch served by its handler waits with the whole
// middleware chain below it, and the runtime halves a waiting goroutine's
// stack only while less than a quarter of it is in use.
func (r *request) startWatch() (*watchStream, error) {
	opts, timeout, err := r.watchOptions()
	if err != nil {
		return nil, err
	}
	out, err := r.negotiateWatch()
	if err != nil {
		return nil, err
	}
	opts.Deadline = time.Now().Add(timeout)
	w, err := r.store.Watch(r.ctx(), opts)
	if err != nil {
		return nil, err
	}

	resp := r.c.Response()
	mediaType := out.info.MediaType
	if mediaType != runtime.ContentTypeJSON {
		mediaType += ";stream=watch" // as kube-apiserver labels a protobuf watch
	}
	resp.Header().Set("Content-Type", mediaType)
	resp.Header().Set("Transfer-Encoding", "chunked")
	resp.WriteHeader(http.StatusOK)
	resp.Flush()

	enc := &eventEncoder{api: r.api, res: r.res, includeObject: r.query("includeObject"), out: out,
		frames: out.info.StreamSerializer.Framer.NewFrameWriter(resp.Writer)}
	return &watchStream{w: w, flush: http.NewResponseController(resp.Writer), enc: enc,
		timer: time.NewTimer(timeout), done: r.ctx().Done(), log: r.api.log, resource: r.res.Name}, nil
}

// run writes events until the watch ends, its deadline passes or the
// client goes away.
func (s *watchStream) run() {
	defer s.w.Stop()
	defer s.timer.Stop()
	for {
		select {
		case ev, ok := <-s.w.ResultChan():
			if !ok || !s.write(ev) {
				return
			}
		case <-s.timer.C:
			return
		case <-s.done:
			return
		}
	}
}

// write writes ev and what is already queued after it, then flushes once:
// under load that turns many small socket writes into one. It reports
// whether the watch goes on.
func (s *watchStream) write(ev watch.Event) bool {
	ok := true
	for written := 1; ; written++ {
		if err := s.enc.write(ev); err != nil {
			// The client went away or the event could not be encoded: the
			// status line is long sent, so all that is left is to stop.
			s.log.Debug("watch stream ended", "resource", s.resource, "err", err)
			return false
		}
		if written == maxEventsPerFlush || len(s.w.ResultChan()) == 0 {
			break
		}
		if ev, ok = <-s.w.ResultChan(); !ok {
			break
		}
	}
	_ = s.flush.Flush()
	return ok
}

func (r *request) watchOptions() (storage.WatchOptions, time.Duration, error) {
	pred, err := r.predicate()
	if err != nil {
		return storage.WatchOptions{}, 0, err
	}
	if r.info.Name != "" {
		byName := fields.OneTermEqualSelector("metadata.name", r.info.Name)
		if pred.Field != nil && !pred.Field.Empty() {
			byName = fields.AndSelectors(pred.Field, byName)
		}
		pred.Field = byName
	}
	opts := storage.WatchOptions{
		Namespace:            r.info.Namespace,
		ResourceVersion:      r.query("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(r.query("resourceVersionMatch")),
		AllowWatchBookmarks:  parseBool(r.query("allowWatchBookmarks")),
		Predicate:            pred,
	}
	if s := r.query("sendInitialEvents"); s != "" {
		v := parseBool(s)
		opts.SendInitialEvents = &v
	}
	// kube-apiserver 1.37 (WatchList on) defaults a watch from "" or "0"
	// that names neither sendInitialEvents nor resourceVersionMatch to
	// sendInitialEvents=true, NotOlderThan: the same initial events, and,
	// if it allows bookmarks, the annotated BOOKMARK that ends them at once.
	defaulted := metainternalversion.ListOptions{Watch: true, ResourceVersion: opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch, SendInitialEvents: opts.SendInitialEvents}
	metainternalversion.SetListOptionsDefaults(&defaulted, true)
	opts.SendInitialEvents, opts.ResourceVersionMatch = defaulted.SendInitialEvents, defaulted.ResourceVersionMatch
	timeout := defaultWatchTimeout + time.Duration(rand.Int64N(int64(defaultWatchTimeout)))
	if s := r.query("timeoutSeconds"); s != "" {
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil || secs < 0 {
			return opts, 0, apierrors.NewBadRequest("timeoutSeconds must be a non-negative integer: " + strconv.Quote(s))
		}
		if secs > 0 {
			timeout = time.Duration(secs) * time.Second
		}
	}
	return opts, timeout, nil
}

func parseBool(s string) bool {
	b, _ := strconv.ParseBool(s)
	return b
}

// eventEncoder writes one WatchEvent per frame: the event's object encoded
// in the negotiated format, wrapped in {"type": ..., "object": ...}.
type eventEncoder struct {
	api           *API
	res           *Resource
	includeObject string
	out           output
	frames        interface{ Write([]byte) (int, error) }
	sentHeader    bool
	obj, frame    bytes.Buffer
}

func (e *eventEncoder) write(ev watch.Event) error {
	if e.out.as == "" && ev.Type != watch.Error && ev.Type != watch.Bookmark {
		if e.out.info.MediaType == runtime.ContentTypeJSON {
			return e.writeSharedJSON(ev)
		}
		return e.writeSharedEvent(ev)
	}
	e.obj.Reset()
	if err := e.encodeObject(ev); err != nil {
		return err
	}
	e.frame.Reset()
	we := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: e.obj.Bytes()}}
	if err := e.out.info.StreamSerializer.Serializer.Encode(we, &e.frame); err != nil {
		return err
	}
	_, err := e.frames.Write(e.frame.Bytes())
	return err
}

// writeSharedJSON writes a JSON event whose whole line is shared by every
// watcher that gets the same event: {"type":"ADDED","object":{...}}.
// Encoding it once instead of once per watcher is what lets one write
// reach a thousand watchers quickly.
func (e *eventEncoder) writeSharedJSON(ev watch.Event) error {
	key := encodeKey{obj: ev.Object, mediaType: runtime.ContentTypeJSON, gv: e.res.GroupVersion, eventType: ev.Type}
	line, err := e.api.encoded.encode(key, func(own runtime.Object) ([]byte, error) {
		var obj bytes.Buffer
		if err := encode(e.out.info.Serializer, e.res.GroupVersion, own, &obj); err != nil {
			return nil, err
		}
		line := make([]byte, 0, obj.Len()+32)
		line = append(line, `{"type":"`...)
		line = append(line, ev.Type...)
		line = append(line, `","object":`...)
		line = append(line, bytes.TrimRight(obj.Bytes(), "\n")...)
		return append(line, "}\n"...), nil
	})
	if err != nil {
		return err
	}
	_, err = e.frames.Write(line)
	return err
}

// writeSharedEvent writes a WatchEvent in another format than JSON
// (protobuf, client-go's choice for built-in kinds) from an encoding
// shared, like writeSharedJSON's line, by every watcher that gets the
// same event; only the frame's length prefix is written per watcher.
func (e *eventEncoder) writeSharedEvent(ev watch.Event) error {
	info := e.out.info
	key := encodeKey{obj: ev.Object, mediaType: info.MediaType, gv: e.res.GroupVersion, eventType: ev.Type}
	event, err := e.api.encoded.encode(key, func(own runtime.Object) ([]byte, error) {
		var obj, event bytes.Buffer
		if err := encode(info.Serializer, e.res.GroupVersion, own, &obj); err != nil {
			return nil, err
		}
		we := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: obj.Bytes()}}
		if err := info.StreamSerializer.Serializer.Encode(we, &event); err != nil {
			return nil, err
		}
		return event.Bytes(), nil
	})
	if err != nil {
		return err
	}
	_, err = e.frames.Write(event)
	return err
}

func (e *eventEncoder) encodeObject(ev watch.Event) error {
	info := e.out.info
	switch {
	case ev.Type == watch.Error:
		return Codecs.EncoderForVersion(info.Serializer, coreV1).Encode(ev.Object, &e.obj)
	case e.out.as == "Table":
		listMeta := metav1.ListMeta{ResourceVersion: resourceVersionOf(ev.Object)}
		// A bookmark is a row too, as kube-apiserver sends it: its object
		// carries the resourceVersion and, at the end of a streaming
		// list's initial events, the k8s.io/initial-events-end annotation.
		t, err := e.res.ConvertToTable([]runtime.Object{ev.Object}, listMeta, includeObject(e.includeObject), e.sentHeader)
		if err != nil {
			return err
		}
		e.sentHeader = true
		return Codecs.EncoderForVersion(info.Serializer, e.out.meta).Encode(t, &e.obj)
	case e.out.as != "":
		return Codecs.EncoderForVersion(info.Serializer, e.out.meta).Encode(partialMetadata(ev.Object), &e.obj)
	case ev.Type == watch.Bookmark && info.MediaType == runtime.ContentTypeJSON:
		// A bookmark carries a resourceVersion and nothing else; a typed
		// empty object would print empty spec and status too.
		return unstructured.UnstructuredJSONScheme.Encode(bookmarkObject(e.res, ev.Object), &e.obj)
	}
	key := encodeKey{obj: ev.Object, mediaType: info.MediaType, gv: e.res.GroupVersion}
	b, err := e.api.encoded.encode(key, func(own runtime.Object) ([]byte, error) {
		var buf bytes.Buffer
		err := encode(info.Serializer, e.res.GroupVersion, own, &buf)
		return buf.Bytes(), err
	})
	if err != nil {
		return err
	}
	e.obj.Write(b)
	return nil
}

func bookmarkObject(res *Resource, obj runtime.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(res.GroupVersion.String())
	u.SetKind(res.Kind)
	if m, err := meta.Accessor(obj); err == nil {
		u.SetResourceVersion(m.GetResourceVersion())
		if a := m.GetAnnotations(); len(a) > 0 {
			u.SetAnnotations(a)
		}
	}
	return u
}
