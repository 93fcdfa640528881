package faults

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"k8s.io/apimachinery/pkg/watch"
)

// The checkers themselves, on histories made by hand: each must catch what
// it is there to catch, or the fault tests could not fail.

func TestRegisterModel(t *testing.T) {
	op := func(c int, call, ret int64, in input, out output) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret}
	}
	create := op(0, 0, 10, input{Op: opCreate, Key: "k", Value: "a"}, output{Out: outOK, RV: 5})
	update := op(0, 20, 30, input{Op: opUpdate, Key: "k", Value: "b", ExpectRV: 5}, output{Out: outOK, RV: 7})
	for name, tc := range map[string]struct {
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		"OK": {[]porcupine.Operation{create, update,
			op(1, 35, 40, input{Op: opGet, Key: "k"}, output{Out: outOK, RV: 7, Value: "b"}),
			op(2, 21, 29, input{Op: opGet, Key: "k"}, output{Out: outOK, RV: 5, Value: "a"}),
			op(1, 50, 60, input{Op: opUpdate, Key: "k", Value: "c", ExpectRV: 5}, output{Out: outConflict}),
		}, porcupine.Ok},
		"ErrStaleRead": {[]porcupine.Operation{create, update,
			op(1, 35, 40, input{Op: opGet, Key: "k"}, output{Out: outOK, RV: 5, Value: "a"}),
		}, porcupine.Illegal},
		"ErrLostUpdate": {[]porcupine.Operation{create, update,
			op(1, 35, 40, input{Op: opUpdate, Key: "k", Value: "c", ExpectRV: 5}, output{Out: outOK, RV: 9}),
		}, porcupine.Illegal},
		"ErrResourceVersionBackwards": {[]porcupine.Operation{create,
			op(0, 20, 30, input{Op: opUpdate, Key: "k", Value: "b", ExpectRV: 5}, output{Out: outOK, RV: 4}),
		}, porcupine.Illegal},
		"ErrCreateTwice": {[]porcupine.Operation{create,
			op(1, 20, 30, input{Op: opCreate, Key: "k", Value: "x"}, output{Out: outOK, RV: 8}),
		}, porcupine.Illegal},
	} {
		t.Run(name, func(t *testing.T) {
			if got := porcupine.CheckOperations(registerModel, tc.ops); (got && tc.want != porcupine.Ok) || (!got && tc.want == porcupine.Ok) {
				t.Errorf("linearizable = %v, want %s", got, tc.want)
			}
		})
	}

	t.Run("ErrRealTimeOrder", func(t *testing.T) {
		ops := []porcupine.Operation{
			op(0, 0, 10, input{Op: opCreate, Key: "a", Value: "1"}, output{Out: outOK, RV: 9}),
			op(1, 20, 30, input{Op: opCreate, Key: "b", Value: "2"}, output{Out: outOK, RV: 8}),
		}
		if bad := realTimeOrder(ops); len(bad) != 1 {
			t.Errorf("realTimeOrder = %q, want one violation", bad)
		}
	})
}

func TestCheckWatch(t *testing.T) {
	hist := []applied{{"a", 11, "1", true}, {"b", 12, "2", true}, {"a", 13, "3", false}}
	ev := func(typ watch.EventType, a applied) item { return item{typ, a.key, a.rv, a.value} }
	bm := func(rv int64) item { return item{typ: watch.Bookmark, rv: rv} }
	for name, tc := range map[string]struct {
		segments []*segment
		want     int
	}{
		"OK": {[]*segment{
			{from: 10, items: []item{ev(watch.Added, hist[0]), bm(11)}},
			{from: 11, items: []item{bm(11), ev(watch.Added, hist[1]), ev(watch.Modified, hist[2]), bm(20)}},
		}, 0},
		"OKAfterGone": {[]*segment{
			{from: 10, items: []item{ev(watch.Added, hist[0])}, gone: true},
			{from: 12, items: []item{ev(watch.Modified, hist[2])}},
		}, 0},
		"OKQuiet": {[]*segment{{from: 13}, {from: 13}}, 0},
		"OKQuietAfterGone": {[]*segment{
			{from: 10, gone: true},
			{from: 13},
			{from: 13},
		}, 0},
		"ErrQuietResumedElsewhere": {[]*segment{{from: 13}, {from: 12}}, 1},
		"ErrGap":                   {[]*segment{{from: 10, items: []item{ev(watch.Added, hist[0]), ev(watch.Modified, hist[2])}}}, 1},
		"ErrGapBeforeBookmark":     {[]*segment{{from: 10, items: []item{ev(watch.Added, hist[0]), bm(12)}}}, 1},
		"ErrDuplicate": {[]*segment{
			{from: 10, items: []item{ev(watch.Added, hist[0])}},
			{from: 10, items: []item{ev(watch.Added, hist[0])}},
		}, 2},
		"ErrBookmarkBackwards": {[]*segment{{from: 13, items: []item{bm(20), bm(15)}}}, 1},
		"ErrWrongValue":        {[]*segment{{from: 10, items: []item{{watch.Added, "a", 11, "x"}}}}, 1},
		"ErrWrongType":         {[]*segment{{from: 10, items: []item{ev(watch.Modified, hist[0])}}}, 1},
		"ErrNoSuchWrite":       {[]*segment{{from: 13, items: []item{{watch.Added, "c", 14, "4"}}}}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			r := checkWatch(&watcher{segments: tc.segments}, hist)
			if len(r.violations) != tc.want {
				t.Errorf("violations %q, want %d", r.violations, tc.want)
			}
		})
	}
}

func TestCheckAcked(t *testing.T) {
	h := newHistory()
	h.add(record{in: input{Op: opCreate, Key: "a", Value: "1"}, out: output{Out: outOK, RV: 11}})
	h.add(record{in: input{Op: opUpdate, Key: "a", Value: "2", ExpectRV: 11}, out: output{Out: outOK, RV: 12}})
	if bad := checkAcked(h, []applied{{"a", 11, "1", true}, {"a", 12, "2", false}}); len(bad) != 0 {
		t.Errorf("OK: %q", bad)
	}
	if bad := checkAcked(h, []applied{{"a", 11, "1", true}}); len(bad) != 1 {
		t.Errorf("a lost write: %q, want one", bad)
	}
	if bad := checkAcked(h, []applied{{"a", 11, "1", true}, {"a", 13, "2", false}}); len(bad) != 1 {
		t.Errorf("a write at another resourceVersion: %q, want one", bad)
	}
	if bad := checkAcked(h, []applied{{"a", 11, "1", true}, {"a", 12, "2", false}, {"a", 14, "2", false}}); len(bad) == 0 {
		t.Error("a write applied twice went unnoticed")
	}
}
