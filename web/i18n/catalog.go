package i18n

import (
	"fmt"
	"reflect"
)

// Catalog is the one way to declare a page's own words: one value of T
// for each language, T being a struct of strings (the fields a template
// names, so that a typo does not compile) or a map from key to string.
//
//	var words = i18n.Catalog[pageWords]{
//		i18n.English: {Title: "Labs"},
//		i18n.Thai:    {Title: "แล็บ"},
//	}
//
// Every catalogue's package has a test that its Missing is empty.
type Catalog[T any] map[Lang]T

// In is the catalogue's words in lang, English for a language it lacks.
func (c Catalog[T]) In(lang Lang) T {
	if v, ok := c[lang]; ok {
		return v
	}
	return c[English]
}

// Missing lists what keeps the catalogue from being whole: a language
// not declared, or a string, key or element that one language has and
// another lacks, by its path ("th.Errors[404]").
func (c Catalog[T]) Missing() []string {
	en, ok := c[English]
	if !ok {
		return []string{"en: not declared"}
	}
	var w walker
	for _, l := range Langs[1:] {
		v, ok := c[l]
		if !ok {
			w.add("%s: not declared", l)
			continue
		}
		w.compare(string(l), reflect.ValueOf(en), reflect.ValueOf(v))
	}
	return w.missing
}

// Untranslated lists every Text inside v (a lab, a quiz bank, anything
// made of structs, slices, maps and pointers) that has one language and
// not the other, by its path. A Text empty in both is an optional field
// left out, not a missing translation.
func Untranslated(v any) []string {
	w := walker{seen: map[uintptr]bool{}}
	w.texts("", reflect.ValueOf(v))
	return w.missing
}

var textType = reflect.TypeFor[Text]()

type walker struct {
	missing []string
	seen    map[uintptr]bool
}

func (w *walker) add(format string, args ...any) {
	w.missing = append(w.missing, fmt.Sprintf(format, args...))
}

// compare walks English's value en beside another language's v.
func (w *walker) compare(path string, en, v reflect.Value) {
	switch en.Kind() {
	case reflect.String:
		if (en.String() == "") != (v.String() == "") {
			w.add("%s: %q in English, %q here", path, en.String(), v.String())
		}
	case reflect.Struct:
		for i := range en.NumField() {
			w.compare(path+"."+en.Type().Field(i).Name, en.Field(i), v.Field(i))
		}
	case reflect.Map:
		for _, k := range en.MapKeys() {
			p := fmt.Sprintf("%s[%v]", path, k)
			if e := v.MapIndex(k); e.IsValid() {
				w.compare(p, en.MapIndex(k), e)
			} else {
				w.add("%s: missing", p)
			}
		}
		for _, k := range v.MapKeys() {
			if !en.MapIndex(k).IsValid() {
				w.add("%s[%v]: not in English", path, k)
			}
		}
	case reflect.Slice, reflect.Array:
		if en.Len() != v.Len() {
			w.add("%s: %d elements in English, %d here", path, en.Len(), v.Len())
			return
		}
		for i := range en.Len() {
			w.compare(fmt.Sprintf("%s[%d]", path, i), en.Index(i), v.Index(i))
		}
	case reflect.Pointer, reflect.Interface:
		if en.IsNil() != v.IsNil() {
			w.add("%s: nil in one language only", path)
		} else if !en.IsNil() {
			w.compare(path, en.Elem(), v.Elem())
		}
	}
}

// texts finds the Texts inside v.
func (w *walker) texts(path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == textType {
			en, th := v.Field(0).String(), v.Field(1).String()
			if (en == "") != (th == "") {
				w.add("%s: English %q, Thai %q", path, en, th)
			}
			return
		}
		for i := range v.NumField() {
			w.texts(path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			w.texts(fmt.Sprintf("%s[%v]", path, iter.Key()), iter.Value())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.texts(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case reflect.Pointer:
		if v.IsNil() || w.seen[v.Pointer()] {
			return
		}
		w.seen[v.Pointer()] = true
		w.texts(path, v.Elem())
	case reflect.Interface:
		if !v.IsNil() {
			w.texts(path, v.Elem())
		}
	}
}
