package web

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// reportDrop is one row of the HTML report's dropped-iterations table
// (arrival-rate tests, issue 13): the drops the workers attributed to a
// request name (the first request of the task each dropped iteration
// would have run; package worker, ratedrops.go), most first.
type reportDrop struct {
	Method, Name string
	Dropped      int64
	Share        string // of all drops, "76.9%"
	Total        bool   // the total row
}

// reportDrops returns the table's rows, the total last; none when the
// run dropped nothing. Drops a worker did not attribute (a Python master
// never sends any; older cicada workers sent the total only) show as the
// difference between the total and the names' sum, in a row of their own.
func reportDrops(snap *stats.Snapshot) []reportDrop {
	total := snap.Total.Dropped
	if total <= 0 {
		return nil
	}
	by := slices.Clone(snap.DroppedBy)
	slices.SortStableFunc(by, func(a, b protocol.DroppedName) int { return cmp.Compare(b.Count, a.Count) })
	share := func(n int64) string { return strconv.FormatFloat(100*float64(n)/float64(total), 'f', 1, 64) + "%" }
	rows := make([]reportDrop, 0, len(by)+2)
	var named int64
	for _, d := range by {
		rows = append(rows, reportDrop{Method: d.Method, Name: d.Name, Dropped: d.Count, Share: share(d.Count)})
		named += d.Count
	}
	if rest := total - named; rest > 0 {
		rows = append(rows, reportDrop{Name: "(not attributed to a name)", Dropped: rest, Share: share(rest)})
	}
	return append(rows, reportDrop{Name: "Total", Dropped: total, Share: "100.0%", Total: true})
}
