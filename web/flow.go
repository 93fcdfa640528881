package web

import (
	"strconv"

	"github.com/kubelab/kubelab/web/i18n"
)

// FlowNode is one box of the request-path flowchart.
type FlowNode struct {
	// Stage is the pipeline stage the node stands for ("client" for the caller).
	Stage string
	Lines []string
	X     int
}

// Geometry of the flowchart, in SVG user units.
const (
	// flowNodeW is wide enough for the longest line of either language
	// (the browser test measures each line against its box).
	flowNodeW = 140
	flowNodeH = 84
	flowGap   = 22
	flowTop   = 14
)

// flowLabels are the flowchart's boxes, a list of lines each.
var flowLabels = i18n.Catalog[[][]string]{
	i18n.English: {
		{"Client", "kubectl / client-go", "/ scheduler"},
		{"Authentication"},
		{"Authorization", "(RBAC)"},
		{"Mutating", "admission", "(writes only)"},
		{"Schema +", "strategy", "validation"},
		{"Validating", "admission", "(writes only)"},
		{"Storage: a write", "goes to etcd;", "the watch cache", "follows etcd"},
		{"Watch stream,", "resourceVersion-", "ordered"},
	},
	i18n.Thai: {
		{"Client", "kubectl / client-go", "/ scheduler"},
		{"Authentication"},
		{"Authorization", "(RBAC)"},
		{"Mutating", "admission", "(เฉพาะการเขียน)"},
		{"Schema +", "strategy", "validation"},
		{"Validating", "admission", "(เฉพาะการเขียน)"},
		{"Storage:", "การเขียนลง etcd", "watch cache", "ตาม etcd"},
		{"Watch stream", "เรียงด้วย", "resourceVersion"},
	},
}

var flowStages = []string{"client", "authentication", "authorization", "mutating-admission",
	"validation", "validating-admission", "storage", "watch"}

// FlowNodes lays out the lesson's request path, left to right.
func FlowNodes(lang i18n.Lang) []FlowNode {
	labels := flowLabels.In(lang)
	out := make([]FlowNode, len(flowStages))
	for i, s := range flowStages {
		out[i] = FlowNode{Stage: s, Lines: labels[i], X: 2 + i*(flowNodeW+flowGap)}
	}
	return out
}

// flowViewBox is the SVG's viewBox: every node and the gaps between them.
func flowViewBox() string {
	return "0 0 " + itoa(4+len(flowStages)*flowNodeW+(len(flowStages)-1)*flowGap) + " 150"
}

func itoa(i int) string { return strconv.Itoa(i) }

// lineY places line i of n, centred in a node.
func lineY(i, n int) string {
	return itoa(flowTop + flowNodeH/2 + (i*2-(n-1))*9 + 4)
}
