package web

import (
	"strings"
	"testing"

	"github.com/cicada-load/cicada/thresholds"
)

func TestReportThresholds(t *testing.T) {
	th, err := thresholds.Parse("p99{/a<b>}<500ms")
	if err != nil {
		t.Fatal(err)
	}
	v := &thresholds.Verdict{Aborted: 0, Results: []thresholds.Result{{Threshold: th, Measured: 612.5, HasValue: true}}}
	for _, tc := range []struct {
		v     *thresholds.Verdict
		wants []string
		not   string
	}{
		{v, []string{`<h2>Thresholds: FAILED</h2>`, `<td>p99{/a&lt;b&gt;}&lt;500ms</td><td class="num">612.50 ms</td><td>FAIL</td><td>stopped the run (abort_on_fail)</td>`}, ""},
		{nil, nil, "Thresholds"},
	} {
		var b strings.Builder
		if err := WriteReport(&b, ReportData{Thresholds: tc.v}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.wants {
			if !strings.Contains(b.String(), w) {
				t.Errorf("report lacks %s", w)
			}
		}
		if tc.not != "" && strings.Contains(b.String(), "<h2>"+tc.not) {
			t.Errorf("report has a %s section without a verdict", tc.not)
		}
	}
}
