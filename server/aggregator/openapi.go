package aggregator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/openapiconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// This file is kube-aggregator's OpenAPI aggregation controller
// (pkg/controllers/openapi and openapiv3): every available APIService
// backed by a service has its backend's /openapi/v2 merged into kubelab's,
// and its group version's /openapi/v3 document published beside kubelab's
// own, so that kubectl explain and clients see aggregated kinds too.

// OpenAPIDocs is where the aggregated documents go; *openapi.Service is one.
type OpenAPIDocs interface {
	// SetV2Spec merges a document into /openapi/v2 under name; nil removes it.
	SetV2Spec(name string, spec *spec.Swagger) error
	// SetDocument serves a /openapi/v3 group version document; nil stops it.
	SetDocument(name string, doc *spec3.OpenAPI)
}

const (
	// openAPIUser is who the aggregator says it is when it downloads a
	// backend's documents, as kube's downloader does.
	openAPIUser = "system:aggregator"
	// maxOpenAPIBytes bounds a downloaded document; kube-apiserver's own
	// /openapi/v2 is a few MiB.
	maxOpenAPIBytes = 32 << 20
	// localETagPrefix marks an ETag made here from a body, for a backend
	// that sends none; it is never sent back to the backend.
	localETagPrefix = "kubelab-sha256:"
)

// OpenAPISynced reports whether the OpenAPI aggregation controller has
// started and finished its first pass: the stored APIServices listed,
// their backends checked, and every available backend's documents fetched
// and published (or found broken and skipped). The server reports it as
// the health check poststarthook/apiservice-openapi-controller, the
// post-start hook kube-apiserver runs the controller from. Without
// Config.Docs there is nothing to aggregate, and it is true once started.
func (a *Aggregator) OpenAPISynced() bool { return a.openapi.synced.Load() }

// openAPIController keeps the published documents in step with the
// backends. It runs after each availability check pass (every
// CheckInterval, and right after APIServices change), so a backend's
// documents come and go with its Available condition; a backend's
// documents already published are fetched again every OpenAPIInterval,
// cheaply when it answers 304 to their ETag.
type openAPIController struct {
	a      *Aggregator
	kick   chan struct{}
	listed atomic.Bool // a check pass ran after the APIServices were listed
	synced atomic.Bool
	// docs is what is published, by APIService name; only run touches it.
	docs map[string]*remoteDocs
}

// remoteDocs is one backend's published documents.
type remoteDocs struct {
	backend *backend
	next    time.Time // when to fetch again

	v2Name string        // the name merged into /openapi/v2 ("apiservice:<name>")
	v2     *spec.Swagger // published, filtered to the group version's paths
	v2ETag string

	v3Name string // "apis/<group>/<version>"
	v3URL  string // the server-relative URL last published, with its hash
	legacy bool   // the backend serves no /openapi/v3: v2 is converted
}

func newOpenAPIController(a *Aggregator) *openAPIController {
	return &openAPIController{a: a, kick: make(chan struct{}, 1), docs: map[string]*remoteDocs{}}
}

// checked is told that a check pass ended; listed says whether the
// APIServices had been listed before it began.
func (c *openAPIController) checked(listed bool) {
	if listed {
		c.listed.Store(true)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *openAPIController) run(ctx context.Context) {
	if c.a.cfg.Docs == nil {
		c.synced.Store(true)
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		listed := c.listed.Load()
		c.sync(ctx)
		if listed && ctx.Err() == nil {
			c.synced.Store(true)
		}
	}
}

// sync drops the documents of backends gone or unavailable, and fetches
// those of new backends and of those due.
func (c *openAPIController) sync(ctx context.Context) {
	c.a.mu.RLock()
	byName := make(map[string]*backend, len(c.a.backends))
	for _, b := range c.a.backends {
		byName[b.name] = b
	}
	c.a.mu.RUnlock()
	for name, d := range c.docs {
		if b := byName[name]; b != d.backend || !b.isAvailable() {
			c.remove(name, d)
		}
	}
	for name, b := range byName {
		if b.url == nil || !b.isAvailable() || ctx.Err() != nil {
			continue
		}
		d := c.docs[name]
		if d == nil {
			d = &remoteDocs{backend: b, v2Name: "apiservice:" + name, v3Name: "apis/" + b.spec.Group + "/" + b.spec.Version}
			c.docs[name] = d
		}
		if time.Now().Before(d.next) {
			continue
		}
		c.fetch(ctx, d)
		d.next = time.Now().Add(c.a.cfg.OpenAPIInterval)
	}
}

func (b *backend) isAvailable() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.available
}

func (c *openAPIController) remove(name string, d *remoteDocs) {
	delete(c.docs, name)
	if d.v2 != nil {
		if err := c.a.cfg.Docs.SetV2Spec(d.v2Name, nil); err != nil {
			c.a.cfg.Logger.Warn("removing an APIService's OpenAPI v2", "name", name, "err", err)
		}
	}
	if d.v3URL != "" {
		c.a.cfg.Docs.SetDocument(d.v3Name, nil)
	}
}

// fetch brings a backend's documents up to date. A document that cannot
// be fetched, read or merged is logged and skipped; what was published
// before stays, as kube keeps a backend's last good spec.
func (c *openAPIController) fetch(ctx context.Context, d *remoteDocs) {
	log := c.a.cfg.Logger.With("apiservice", d.backend.name)
	v2Changed, err := c.fetchV2(ctx, d)
	if err != nil {
		log.Warn("aggregating an APIService's OpenAPI v2", "err", err)
	}
	if err := c.fetchV3(ctx, d, v2Changed); err != nil {
		log.Warn("aggregating an APIService's OpenAPI v3", "err", err)
	}
}

// fetchV2 downloads /openapi/v2, keeps the APIService's group version's
// paths (and the definitions they use), as kube does, and merges that into
// kubelab's document; it reports whether the published document changed.
func (c *openAPIController) fetchV2(ctx context.Context, d *remoteDocs) (bool, error) {
	body, etag, status, err := d.backend.download(ctx, "/openapi/v2", d.v2ETag)
	switch {
	case err != nil:
		return false, err
	case status == http.StatusNotModified:
		return false, nil
	case status == http.StatusNotFound:
		// A backend without OpenAPI publishes nothing, as in kube.
		if d.v2 == nil {
			return false, nil
		}
		d.v2, d.v2ETag = nil, ""
		return true, c.a.cfg.Docs.SetV2Spec(d.v2Name, nil)
	}
	doc := &spec.Swagger{}
	if err := doc.UnmarshalJSON(body); err != nil {
		return false, fmt.Errorf("reading /openapi/v2: %w", err)
	}
	gv := "/apis/" + d.backend.spec.Group + "/" + d.backend.spec.Version + "/"
	doc = aggregator.FilterSpecByPathsWithoutSideEffects(doc, []string{gv})
	if err := convertsToProto(doc); err != nil {
		return false, fmt.Errorf("/openapi/v2 is not a valid document: %w", err)
	}
	if err := c.a.cfg.Docs.SetV2Spec(d.v2Name, doc); err != nil {
		return false, err
	}
	d.v2, d.v2ETag = doc, etag
	return true, nil
}

// convertsToProto checks that doc converts to protobuf: kubelab serves
// /openapi/v2 as protobuf too (kubectl asks for it), converted from the
// merged document when asked, and one document that does not convert
// would break that for everyone. The info object the merged document
// gets from kubelab's own is lent to a document without one.
func convertsToProto(doc *spec.Swagger) error {
	check := *doc
	if check.Info == nil {
		check.Info = &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: "unversioned"}}
	}
	raw, err := json.Marshal(&check)
	if err == nil {
		_, err = handler.ToProtoBinary(raw)
	}
	return err
}

// fetchV3 publishes the group version's document the backend lists in
// its /openapi/v3, fetched again only when its URL (which carries the
// document's hash) changes; a backend without /openapi/v3 gets its v2
// document converted, as kube-aggregator does.
func (c *openAPIController) fetchV3(ctx context.Context, d *remoteDocs, v2Changed bool) error {
	body, _, status, err := d.backend.download(ctx, "/openapi/v3", "")
	if err != nil {
		return err
	}
	if status == http.StatusNotFound {
		if d.legacy && !v2Changed {
			return nil
		}
		d.legacy = true
		return c.publishV3(d, "converted:"+d.v2ETag, func() (*spec3.OpenAPI, error) {
			if d.v2 == nil {
				return nil, nil
			}
			return openapiconv.ConvertV2ToV3(d.v2), nil
		})
	}
	d.legacy = false
	var disc handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(body, &disc); err != nil {
		return fmt.Errorf("reading /openapi/v3: %w", err)
	}
	gv, ok := disc.Paths[d.v3Name]
	if !ok {
		return c.publishV3(d, "", func() (*spec3.OpenAPI, error) { return nil, nil })
	}
	if gv.ServerRelativeURL == d.v3URL {
		return nil
	}
	return c.publishV3(d, gv.ServerRelativeURL, func() (*spec3.OpenAPI, error) {
		ref, err := url.Parse(gv.ServerRelativeURL)
		if err != nil {
			return nil, err
		}
		body, _, status, err := d.backend.download(ctx, ref.RequestURI(), "")
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("%s: status %d", gv.ServerRelativeURL, status)
		}
		doc := &spec3.OpenAPI{}
		if err := doc.UnmarshalJSON(body); err != nil {
			return nil, fmt.Errorf("reading %s: %w", gv.ServerRelativeURL, err)
		}
		return doc, nil
	})
}

// publishV3 serves the document get returns under d.v3Name, or stops
// serving it when get returns none; at is what the document is known by.
func (c *openAPIController) publishV3(d *remoteDocs, at string, get func() (*spec3.OpenAPI, error)) error {
	doc, err := get()
	if err != nil {
		return err
	}
	if doc == nil {
		if d.v3URL != "" {
			c.a.cfg.Docs.SetDocument(d.v3Name, nil)
			d.v3URL = ""
		}
		return nil
	}
	// As for v2: kubelab converts documents to protobuf when asked.
	raw, err := json.Marshal(doc)
	if err == nil {
		_, err = handler3.ToV3ProtoBinary(raw)
	}
	if err != nil {
		return fmt.Errorf("%s is not a valid document: %w", d.v3Name, err)
	}
	c.a.cfg.Docs.SetDocument(d.v3Name, doc)
	d.v3URL = at
	return nil
}

var errNotModifiedWithoutETag = errors.New("304 Not Modified to a request without an ETag")

// download GETs path from the backend as the aggregator. It returns the
// body and its ETag (made from the body when the backend sends none), and
// 304 when that ETag is etag.
func (b *backend) download(ctx context.Context, path, etag string) ([]byte, string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ref, err := url.Parse(path)
	if err != nil {
		return nil, "", 0, err
	}
	u := b.url.ResolveReference(ref)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", 0, err
	}
	req.Header.Set("Accept", "application/json")
	if etag != "" && !isLocalETag(etag) {
		req.Header.Set("If-None-Match", etag)
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	req.Header.Set("X-Remote-User", openAPIUser)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		if etag == "" {
			return nil, "", 0, errNotModifiedWithoutETag
		}
		return nil, etag, http.StatusNotModified, nil
	case http.StatusNotFound:
		return nil, "", http.StatusNotFound, nil
	case http.StatusOK:
	default:
		return nil, "", 0, fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAPIBytes+1))
	if err != nil {
		return nil, "", 0, fmt.Errorf("GET %s: %w", path, err)
	}
	if len(body) > maxOpenAPIBytes {
		return nil, "", 0, fmt.Errorf("GET %s: larger than %d bytes", path, maxOpenAPIBytes)
	}
	newETag := resp.Header.Get("ETag")
	if newETag == "" {
		sum := sha256.Sum256(body)
		newETag = localETagPrefix + hex.EncodeToString(sum[:])
		if newETag == etag {
			return nil, etag, http.StatusNotModified, nil
		}
	}
	return body, newETag, http.StatusOK, nil
}

func isLocalETag(etag string) bool { return strings.HasPrefix(etag, localETagPrefix) }
