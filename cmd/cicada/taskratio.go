package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/worker"
)

// Task ratios for --show-task-ratio and --show-task-ratio-json, as Locust
// 2.12.1 prints them (locust/user/inspectuser.py, called from
// locust/main.py before anything starts): the users of each class for -u
// (or, without -u, the sum of the weights) by Locust's _calc_distribution,
// and each task's share of its class (per class) and of all users (total).
//
// As in Locust, the ratios are those of the scenario as written: -T/-E and
// --equal-weights act later, when a test starts, and do not change them.
// Deliberate differences: classes picked by name on the command line are
// in command-line order, where Locust's are in the order of a Python set
// (varying from run to run); two tasks of one class with the same name (two
// tasks on one path) are one row with their shares added, where Locust
// keys its rows by function object and prints the last one's share.

// ratioNode is one row: a class or a task, with its share and children.
type ratioNode struct {
	name  string
	ratio float64
	tasks []ratioNode
}

// classCounts is Locust's _calc_distribution: users per class for
// numUsers (0: not set), rounded half to even as Python's round().
func classCounts(classes []worker.UserClass, numUsers int) []int {
	fixed, totalWeight := 0, 0
	for _, c := range classes {
		if c.FixedCount > 0 {
			fixed += c.FixedCount
		} else {
			totalWeight += max(c.Weight, 1)
		}
	}
	if numUsers == 0 {
		numUsers = totalWeight
		if fixed > 0 {
			numUsers = 1
		}
	}
	weighted := max(numUsers-fixed, 0)
	out := make([]int, len(classes))
	for i, c := range classes {
		if c.FixedCount > 0 {
			out[i] = c.FixedCount
			continue
		}
		out[i] = int(math.RoundToEven(float64(max(c.Weight, 1)) / float64(totalWeight) * float64(weighted)))
	}
	return out
}

// taskRatios is Locust's get_ratio: per class (total false) or of all
// users (total true).
func taskRatios(classes []worker.UserClass, counts []int, total bool) []ratioNode {
	userCount := 0
	for _, n := range counts {
		userCount += n
	}
	if userCount == 0 {
		userCount = 1
	}
	out := make([]ratioNode, 0, len(classes))
	for i, c := range classes {
		r := float64(counts[i]) / float64(userCount)
		parent := 1.0
		if total {
			parent = r
		}
		// Locust's tasks list holds each task weight times.
		n, order, reps := 0, []string{}, map[string]int{}
		for _, t := range c.Tasks {
			w := max(t.Weight, 1)
			n += w
			if _, ok := reps[t.Name]; !ok {
				order = append(order, t.Name)
			}
			reps[t.Name] += w
		}
		node := ratioNode{name: c.Name, ratio: r}
		for _, name := range order {
			node.tasks = append(node.tasks, ratioNode{name: name, ratio: float64(reps[name]) * parent / float64(n)})
		}
		out = append(out, node)
	}
	return out
}

// writeTaskRatio prints --show-task-ratio's two tables.
func writeTaskRatio(w io.Writer, classes []worker.UserClass, numUsers int) {
	counts := classCounts(classes, numUsers)
	var b strings.Builder
	b.WriteString("\n Task ratio per User class\n")
	b.WriteString(strings.Repeat("-", 80) + "\n")
	writeRatioRows(&b, taskRatios(classes, counts, false), 0)
	b.WriteString("\n Total task ratio\n")
	b.WriteString(strings.Repeat("-", 80) + "\n")
	writeRatioRows(&b, taskRatios(classes, counts, true), 0)
	_, _ = io.WriteString(w, b.String())
}

// writeRatioRows is Locust's _print_task_ratio:
// " %-10s %-50s" % (padding + "%-6.1f" % (ratio*100), padding + name).
func writeRatioRows(b *strings.Builder, rows []ratioNode, level int) {
	pad := strings.Repeat("  ", level)
	for _, r := range rows {
		fmt.Fprintf(b, " %-10s %-50s\n", pad+fmt.Sprintf("%-6.1f", r.ratio*100), pad+r.name)
		writeRatioRows(b, r.tasks, level+1)
	}
}

// writeTaskRatioJSON prints --show-task-ratio-json: Python's
// json.dumps({"per_class": ..., "total": ...}, indent=4).
func writeTaskRatioJSON(w io.Writer, classes []worker.UserClass, numUsers int) {
	counts := classCounts(classes, numUsers)
	var b strings.Builder
	b.WriteString("{\n")
	b.WriteString(`    "per_class": `)
	writeRatioJSON(&b, taskRatios(classes, counts, false), 1)
	b.WriteString(",\n")
	b.WriteString(`    "total": `)
	writeRatioJSON(&b, taskRatios(classes, counts, true), 1)
	b.WriteString("\n}\n")
	_, _ = io.WriteString(w, b.String())
}

// writeRatioJSON writes rows as a JSON object at indent level level (the
// opening brace is already placed).
func writeRatioJSON(b *strings.Builder, rows []ratioNode, level int) {
	if len(rows) == 0 {
		b.WriteString("{}")
		return
	}
	in := strings.Repeat("    ", level+1)
	b.WriteString("{\n")
	for i, r := range rows {
		b.WriteString(in + string(pyrepr.AppendJSONString(nil, r.name)) + ": {\n")
		b.WriteString(in + `    "ratio": ` + pyrepr.Float(r.ratio))
		if r.tasks != nil {
			b.WriteString(",\n" + in + `    "tasks": `)
			writeRatioJSON(b, r.tasks, level+2)
		}
		b.WriteString("\n" + in + "}")
		if i < len(rows)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(strings.Repeat("    ", level) + "}")
}
