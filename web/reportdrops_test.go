package web

import (
	"strings"
	"testing"

	"github.com/cicada-load/cicada/stats"
)

func TestReportDrops(t *testing.T) {
	rec := stats.NewRecorder(nil)
	rec.AddDroppedFor("GET", "/a?x=<script>alert(1)</script>", 3)
	rec.AddDroppedFor("TASK", "checkout & pay", 9)
	rec.AddDropped(1) // not attributed
	s := stats.New(nil)
	s.Merge(rec.Report(nil, 1))
	for _, tc := range []struct {
		name  string
		snap  *stats.Snapshot
		wants []string
		not   []string
	}{
		{"drops", s.Snapshot(), []string{
			`<h2>Dropped Iterations</h2>`,
			`<tr><td>TASK</td><td>checkout &amp; pay</td><td class="num">9</td><td class="num">69.2%</td></tr>`,
			`<tr><td>GET</td><td>/a?x=&lt;script&gt;alert(1)&lt;/script&gt;</td><td class="num">3</td><td class="num">23.1%</td></tr>`,
			`<tr><td></td><td>(not attributed to a name)</td><td class="num">1</td><td class="num">7.7%</td></tr>`,
			`<tr class="total"><td></td><td>Total</td><td class="num">13</td><td class="num">100.0%</td></tr>`,
		}, []string{"<script>alert"}},
		{"closed model", stats.New(nil).Snapshot(), nil, []string{"Dropped Iterations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteReport(&b, ReportData{Snapshot: tc.snap}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("report has %s", n)
				}
			}
			// The rows in order, most first, the total last.
			if tc.wants != nil {
				i, j, k := strings.Index(out, "checkout"), strings.Index(out, "/a?x="), strings.Index(out, ">Total<")
				if i >= j || j >= k {
					t.Errorf("rows out of order: %d %d %d", i, j, k)
				}
			}
		})
	}
}
