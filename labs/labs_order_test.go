package labs_test

import (
	"slices"
	"testing"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// TestLabsFollowTheLesson: the labs are numbered in the order the
// lesson's pages link them, so that lesson 1's "Practise this" opens lab 1
// (it opened "Lab 7 of 7").
func TestLabsFollowTheLesson(t *testing.T) {
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, p := range lessons[i18n.English].Pages {
		for _, b := range p.Blocks {
			if b.Kind == web.LabLink && !slices.Contains(linked, b.ID) {
				linked = append(linked, b.ID)
			}
		}
	}
	var all []string
	for _, l := range labs.All() {
		all = append(all, l.ID)
	}
	if !slices.Equal(linked, all) {
		t.Fatalf("the lesson links the labs in the order %v, and they are numbered %v", linked, all)
	}
}
