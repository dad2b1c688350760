package master

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// Dropped iterations by name (issue 13's leftovers): the workers attribute
// each drop to the first request of the task it would have run
// (package worker, ratedrops.go); the master shows the total and the
// names with the most drops under the periodic console table, every name
// in the summary's arrival-rate table and in PREFIX_rate.csv (the
// "Dropped Iterations" column of each row, and a row for a name that
// has drops but no request), and the HTML report has them too (package
// web). Python workers drop nothing (they run the closed model).

// maxDroppedLineNames bounds the names on the periodic console line.
const maxDroppedLineNames = 5

// droppedRanking returns snap's per-name drops, most first (then by name
// and method).
func droppedRanking(snap *stats.Snapshot) []protocol.DroppedName {
	out := slices.Clone(snap.DroppedBy)
	slices.SortStableFunc(out, func(a, b protocol.DroppedName) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// droppedLabel is "METHOD name", or the name alone without a method.
func droppedLabel(d protocol.DroppedName) string {
	if d.Method == "" {
		return d.Name
	}
	return d.Method + " " + d.Name
}

// writeDroppedLine writes, in an arrival-rate test that dropped
// iterations, the line under the periodic table:
//
//	Dropped iterations (arrival rate): 123 of 1000 due; GET /a 100, TASK checkout 23
//
// with at most maxDroppedLineNames names ("and N more names" after them).
func writeDroppedLine(w io.Writer, snap *stats.Snapshot, rf *rateFrame) {
	if rf == nil || snap.Total.Dropped == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Dropped iterations (arrival rate): %d", snap.Total.Dropped)
	rank := droppedRanking(snap)
	for i, d := range rank {
		if i == maxDroppedLineNames {
			fmt.Fprintf(&b, " and %d more names", len(rank)-i)
			break
		}
		sep := ", "
		if i == 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s%s %d", sep, droppedLabel(d), d.Count)
	}
	b.WriteString("\n\n")
	_, _ = io.WriteString(w, b.String())
}

// writeDroppedTable adds the summary's per-name drops to the arrival-rate
// table (nothing when nothing was dropped), most first, at most
// maxRateRows names.
func writeDroppedTable(b *strings.Builder, snap *stats.Snapshot) {
	rank := droppedRanking(snap)
	if len(rank) == 0 {
		return
	}
	b.WriteString("\nDropped iterations by name (the first request of the task each would have run)\n")
	fmt.Fprintf(b, "%-8s %-60s %12s %8s\n", "Type", "Name", "Dropped", "Share")
	b.WriteString(strings.Repeat("-", 8+1+60+1+12+1+8) + "\n")
	for i, d := range rank {
		if i == maxRateRows {
			fmt.Fprintf(b, "(%d more names in the CSV file)\n", len(rank)-i)
			break
		}
		fmt.Fprintf(b, "%-8s %-60s %12d %7.1f%%\n", d.Method, clipName(d.Name, 60), d.Count, 100*float64(d.Count)/float64(max(snap.Total.Dropped, 1)))
	}
}

// droppedOnly returns the per-name drops of names without an entry in
// snap (their iterations never sent a request), in DroppedBy's order.
func droppedOnly(snap *stats.Snapshot) []protocol.DroppedName {
	var out []protocol.DroppedName
	for _, d := range snap.DroppedBy {
		_, found := slices.BinarySearchFunc(snap.Entries, d, func(e stats.EntryStats, d protocol.DroppedName) int {
			return cmp.Or(cmp.Compare(e.Name, d.Name), cmp.Compare(e.Method, d.Method))
		})
		if !found {
			out = append(out, d)
		}
	}
	return out
}
