// Package metrics is kubelab's Prometheus instrumentation, named as
// kube-apiserver names its own where there is an equivalent
// (apiserver_request_total, apiserver_request_duration_seconds,
// etcd_request_duration_seconds), so dashboards made for a real API
// server read kubelab's too.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/pipeline"
)

// Metrics holds kubelab's collectors in a registry of its own.
type Metrics struct {
	// Registry is where other parts of kubelab (the web UI, quizzes)
	// register their collectors.
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	etcd     *prometheus.HistogramVec
}

// New returns the collectors, with Go's runtime and process metrics.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests served, by verb, API group, resource, subresource and HTTP code.",
		}, []string{"verb", "group", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds",
			Help: "Time to answer a request (for a watch, until it ended), by verb, API group, resource and subresource.",
			// kube-apiserver's buckets, from 5 ms to 60 s.
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "group", "resource", "subresource"}),
		etcd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Time of each etcd request kubelab makes, by operation.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"operation"}),
	}
	m.Registry.MustRegister(m.requests, m.latency, m.etcd,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ObserveRequest counts a finished request from its trace.
func (m *Metrics) ObserveRequest(t *pipeline.Trace, code int, elapsed time.Duration) {
	verb := t.Verb
	if verb == "" {
		verb = "other"
	}
	m.requests.WithLabelValues(verb, t.APIGroup, t.Resource, t.Subresource, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(verb, t.APIGroup, t.Resource, t.Subresource).Observe(elapsed.Seconds())
}

// Gauge registers a gauge read from f at each scrape.
func (m *Metrics) Gauge(name, help string, f func() float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// Counter registers a counter read from f at each scrape; f must never
// go down.
func (m *Metrics) Counter(name, help string, f func() float64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
}

// InstrumentEtcd times every key-value request made through client, by
// wrapping its KV; call it before anything uses the client.
func (m *Metrics) InstrumentEtcd(client *clientv3.Client) {
	client.KV = timedKV{KV: client.KV, observe: m.observeEtcd}
}

func (m *Metrics) observeEtcd(op string, start time.Time) {
	m.etcd.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

type timedKV struct {
	clientv3.KV
	observe func(op string, start time.Time)
}

func (k timedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	defer k.observe("get", time.Now())
	return k.KV.Get(ctx, key, opts...)
}

func (k timedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	defer k.observe("put", time.Now())
	return k.KV.Put(ctx, key, val, opts...)
}

func (k timedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	defer k.observe("delete", time.Now())
	return k.KV.Delete(ctx, key, opts...)
}

func (k timedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	defer k.observe("compact", time.Now())
	return k.KV.Compact(ctx, rev, opts...)
}

func (k timedKV) Txn(ctx context.Context) clientv3.Txn {
	return timedTxn{Txn: k.KV.Txn(ctx), observe: k.observe}
}

type timedTxn struct {
	clientv3.Txn
	observe func(op string, start time.Time)
}

func (t timedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	return timedTxn{Txn: t.Txn.If(cs...), observe: t.observe}
}

func (t timedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	return timedTxn{Txn: t.Txn.Then(ops...), observe: t.observe}
}

func (t timedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	return timedTxn{Txn: t.Txn.Else(ops...), observe: t.observe}
}

func (t timedTxn) Commit() (*clientv3.TxnResponse, error) {
	defer t.observe("txn", time.Now())
	return t.Txn.Commit()
}
