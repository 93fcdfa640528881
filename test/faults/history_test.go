package faults

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// opKind is what a client asked for.
type opKind string

const (
	opGet    opKind = "get"
	opCreate opKind = "create"
	opUpdate opKind = "update"
)

// outcome is what the client learnt. outUnknown is an error that does not
// say whether a write landed (the connection broke, a 5xx, a timeout): the
// etcd history decides afterwards.
type outcome string

const (
	outOK       outcome = "ok"
	outConflict outcome = "conflict"
	outExists   outcome = "exists"
	outNotFound outcome = "notfound"
	outUnknown  outcome = "unknown"
)

// input is one operation on one key. Every write carries a value no other
// write carries, so that the etcd history tells which writes landed.
type input struct {
	Op       opKind
	Key      string
	Value    string
	ExpectRV int64 // update: the resourceVersion precondition
}

// output is the answer: for ok, the resourceVersion returned, and for a get
// the value read.
type output struct {
	Out   outcome
	RV    int64
	Value string
}

// record is one operation with its real-time interval, in nanoseconds since
// the history began.
type record struct {
	client     int
	in         input
	out        output
	call, ret  int64
	unresolved bool // an unknown write; resolved against the etcd history
}

// history collects every client's operations.
type history struct {
	start time.Time

	mu      sync.Mutex
	records []record
	// readyAt are the moments a restarted server answered again: a write
	// in flight when the server was killed was decided by then.
	readyAt []int64
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(r record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
}

func (h *history) ready() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readyAt = append(h.readyAt, h.now())
}

// checksum goes into every object beside its value: a half-written object
// would not match it.
func checksum(v string) string {
	s := sha256.Sum256([]byte(v))
	return hex.EncodeToString(s[:8])
}

// applied is a write as etcd's history holds it.
type applied struct {
	key     string
	rv      int64
	value   string
	created bool
}

// resolve turns the records into porcupine operations. A write whose outcome
// was unknown happened if and only if etcd's history holds its value; if it
// did, its answer is the resourceVersion there, and it took effect before
// the server next answered (it was in flight when the server died, and etcd
// had decided it before serving again) or, if the server never died, at
// some time after the call. A write that did not happen is left out, as it
// had no effect. A get that failed says nothing and is left out too.
func (h *history) resolve(etcdHistory []applied) (ops []porcupine.Operation, landed, dropped int) {
	byValue := map[string]applied{}
	for _, a := range etcdHistory {
		byValue[a.value] = a
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.out.Out == outUnknown {
			if r.in.Op == opGet {
				dropped++
				continue
			}
			a, ok := byValue[r.in.Value]
			if !ok {
				dropped++
				continue
			}
			landed++
			r.out = output{Out: outOK, RV: a.rv}
			r.ret = math.MaxInt64
			for _, at := range h.readyAt {
				if at > r.call {
					r.ret = at
					break
				}
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: r.client, Input: r.in, Call: r.call, Output: r.out, Return: r.ret})
	}
	return ops, landed, dropped
}

// register is one key's state: does the object exist, at which
// resourceVersion, with which value.
type register struct {
	Exists bool
	RV     int64
	Value  string
}

// registerModel is a per-key register with resourceVersion compare-and-set:
// a create succeeds only on a missing key, an update only when its
// precondition is the current resourceVersion, every write's
// resourceVersion is above the last one, and a get returns the state.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return register{} },
	Step: func(state, in, out any) (bool, any) {
		st, i, o := state.(register), in.(input), out.(output)
		switch i.Op {
		case opGet:
			if o.Out == outNotFound {
				return !st.Exists, st
			}
			return o.Out == outOK && st.Exists && o.RV == st.RV && o.Value == st.Value, st
		case opCreate:
			switch o.Out {
			case outOK:
				return !st.Exists && o.RV > st.RV, register{true, o.RV, i.Value}
			case outExists:
				return st.Exists, st
			}
		case opUpdate:
			switch o.Out {
			case outOK:
				return st.Exists && st.RV == i.ExpectRV && o.RV > st.RV, register{true, o.RV, i.Value}
			case outConflict:
				return st.Exists && st.RV != i.ExpectRV, st
			case outNotFound:
				return !st.Exists, st
			}
		}
		return false, st
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(input), out.(output)
		return fmt.Sprintf("%s %s %q rv=%d -> %s rv=%d %q", i.Op, i.Key, i.Value, i.ExpectRV, o.Out, o.RV, o.Value)
	},
	DescribeState: func(state any) string {
		st := state.(register)
		return fmt.Sprintf("exists=%v rv=%d %q", st.Exists, st.RV, st.Value)
	},
}

// realTimeOrder checks resourceVersions against real time across keys: a
// write that returned before another was called has the lower
// resourceVersion (etcd's revision is one linearizable counter).
func realTimeOrder(ops []porcupine.Operation) []string {
	var writes []porcupine.Operation
	for _, op := range ops {
		if op.Input.(input).Op != opGet && op.Output.(output).Out == outOK {
			writes = append(writes, op)
		}
	}
	byReturn := slices.Clone(writes)
	slices.SortFunc(byReturn, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
	slices.SortFunc(writes, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var bad []string
	var maxRV int64
	var maxOp porcupine.Operation
	j := 0
	for _, op := range writes {
		for ; j < len(byReturn) && byReturn[j].Return < op.Call; j++ {
			if rv := byReturn[j].Output.(output).RV; rv > maxRV {
				maxRV, maxOp = rv, byReturn[j]
			}
		}
		if rv := op.Output.(output).RV; rv <= maxRV {
			bad = append(bad, fmt.Sprintf("%s got resourceVersion %d, below the %d of %s, which returned before it was called",
				op.Input.(input).Key, rv, maxRV, maxOp.Input.(input).Key))
		}
	}
	return bad
}
