package web_test

import (
	"bytes"
	"fmt"
	"math"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// promSample is one parsed sample line.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition is a strict parser of the Prometheus text format 0.0.4:
// HELP and TYPE once per family and before its samples, samples of a family
// contiguous, valid names, escaped label values, no duplicate series, and
// histogram invariants. It returns the samples and the type of each family.
func parseExposition(text string) ([]promSample, map[string]string, error) {
	types := map[string]string{}
	helps := map[string]bool{}
	seen := map[string]bool{}
	closed := map[string]bool{}
	current := ""
	var samples []promSample
	if !strings.HasSuffix(text, "\n") {
		return nil, nil, fmt.Errorf("no trailing newline")
	}
	family := func(sample string) string {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(sample, suf); ok && types[base] == "histogram" {
				return base
			}
		}
		return sample
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		ln := i + 1
		if line == "" {
			return nil, nil, fmt.Errorf("line %d: empty line", ln)
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				return nil, nil, fmt.Errorf("line %d: bad comment %q", ln, line)
			}
			name := f[2]
			if !metricNameRE.MatchString(name) {
				return nil, nil, fmt.Errorf("line %d: bad metric name %q", ln, name)
			}
			if closed[name] {
				return nil, nil, fmt.Errorf("line %d: family %s reopened", ln, name)
			}
			if current != "" && current != name {
				closed[current] = true
			}
			current = name
			if f[1] == "HELP" {
				if helps[name] {
					return nil, nil, fmt.Errorf("line %d: second HELP for %s", ln, name)
				}
				helps[name] = true
				continue
			}
			if _, dup := types[name]; dup || len(f) != 4 {
				return nil, nil, fmt.Errorf("line %d: bad or second TYPE for %s", ln, name)
			}
			switch f[3] {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				return nil, nil, fmt.Errorf("line %d: bad type %q", ln, f[3])
			}
			types[name] = f[3]
			continue
		}
		s, err := parseSampleLine(line)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", ln, err)
		}
		fam := family(s.name)
		if _, ok := types[fam]; !ok {
			return nil, nil, fmt.Errorf("line %d: sample %s before its TYPE", ln, s.name)
		}
		if fam != current {
			return nil, nil, fmt.Errorf("line %d: sample of %s inside family %s", ln, fam, current)
		}
		key := s.name + fmt.Sprint(sortedLabels(s.labels))
		if seen[key] {
			return nil, nil, fmt.Errorf("line %d: duplicate series %s", ln, key)
		}
		seen[key] = true
		if types[fam] == "counter" && (s.value < 0 || math.IsNaN(s.value)) {
			return nil, nil, fmt.Errorf("line %d: counter %s = %v", ln, s.name, s.value)
		}
		samples = append(samples, s)
	}
	return samples, types, checkHistograms(samples, types)
}

func sortedLabels(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// parseSampleLine parses `name{l="v",...} value`.
func parseSampleLine(line string) (promSample, error) {
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	s.name = line[:i]
	if !metricNameRE.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name %q", s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return s, fmt.Errorf("bad labels in %q", line)
			}
			ln := rest[:eq]
			if !labelNameRE.MatchString(ln) || strings.HasPrefix(ln, "__") {
				return s, fmt.Errorf("bad label name %q", ln)
			}
			rest = rest[eq+2:]
			var v strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				c := rest[j]
				if c == '\n' {
					return s, fmt.Errorf("raw newline in label value")
				}
				if c == '\\' {
					j++
					if j == len(rest) {
						return s, fmt.Errorf("dangling escape")
					}
					switch rest[j] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", rest[j])
					}
					continue
				}
				v.WriteByte(c)
			}
			if j == len(rest) {
				return s, fmt.Errorf("unterminated label value")
			}
			if _, dup := s.labels[ln]; dup {
				return s, fmt.Errorf("duplicate label %s", ln)
			}
			s.labels[ln] = v.String()
			rest = rest[j+1:]
			rest = strings.TrimPrefix(rest, ",")
		}
	}
	if !strings.HasPrefix(rest, " ") {
		return s, fmt.Errorf("no space before value in %q", line)
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("bad value in %q", line)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value %q", f[0])
	}
	s.value = v
	return s, nil
}

// checkHistograms checks each histogram series: le ascending and ending at
// +Inf, cumulative counts non-decreasing, +Inf bucket = _count, _sum present.
func checkHistograms(samples []promSample, types map[string]string) error {
	type series struct {
		les    []float64
		counts []float64
		count  float64
		sum    bool
		hasCnt bool
	}
	all := map[string]*series{}
	for _, s := range samples {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			base, ok := strings.CutSuffix(s.name, suf)
			if !ok || types[base] != "histogram" {
				continue
			}
			l := map[string]string{}
			for k, v := range s.labels {
				if k != "le" {
					l[k] = v
				}
			}
			key := base + fmt.Sprint(sortedLabels(l))
			h := all[key]
			if h == nil {
				h = &series{}
				all[key] = h
			}
			switch suf {
			case "_bucket":
				le, err := strconv.ParseFloat(s.labels["le"], 64)
				if err != nil {
					return fmt.Errorf("%s: bad le %q", key, s.labels["le"])
				}
				h.les = append(h.les, le)
				h.counts = append(h.counts, s.value)
			case "_sum":
				h.sum = true
			case "_count":
				h.count, h.hasCnt = s.value, true
			}
		}
	}
	for key, h := range all {
		n := len(h.les)
		if n == 0 || !math.IsInf(h.les[n-1], 1) || !h.sum || !h.hasCnt {
			return fmt.Errorf("%s: incomplete histogram", key)
		}
		for i := 1; i < n; i++ {
			if h.les[i] <= h.les[i-1] || h.counts[i] < h.counts[i-1] {
				return fmt.Errorf("%s: buckets not ascending/cumulative", key)
			}
		}
		if h.counts[n-1] != h.count {
			return fmt.Errorf("%s: +Inf bucket %v != count %v", key, h.counts[n-1], h.count)
		}
	}
	return nil
}

func TestExpositionParserRejects(t *testing.T) {
	bad := []string{
		"x 1",                                   // no trailing newline
		"x 1\n",                                 // no TYPE
		"# TYPE x counter\nx -1\n",              // negative counter
		"# TYPE x gauge\nx{a=\"b} 1\n",          // unterminated
		"# TYPE x gauge\nx{a=\"\\q\"} 1\n",      // bad escape
		"# TYPE x gauge\nx 1\nx 2\n",            // duplicate
		"# TYPE x gauge\n# TYPE y gauge\nx 1\n", // sample outside its family
		"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"# TYPE 1x gauge\n1x 1\n",
	}
	for _, b := range bad {
		if _, _, err := parseExposition(b); err == nil {
			t.Errorf("parseExposition(%q) accepted", b)
		}
	}
}

func metricsEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t, web.Options{}, webtest.Options{Workers: 3, Names: []string{"/", "/a \"quoted\" \\ name\nx", "/missing"}})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"6"}, "spawn_rate": {"6"}})
	e.run(15)
	e.runner.Stats().AddException("boom", "tb", "local")
	r := e.get(t, "/metrics")
	if r.code != 200 || r.header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics = %d %v", r.code, r.header)
	}
	return e, string(r.body)
}

func TestMetrics(t *testing.T) {
	e, text := metricsEnv(t)
	samples, types, err := parseExposition(text)
	if err != nil {
		t.Fatalf("exposition invalid: %v\n%s", err, text)
	}
	for name, typ := range types {
		if typ == "counter" && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s lacks _total", name)
		}
		if !strings.HasPrefix(name, "cicada_") {
			t.Errorf("metric %s lacks the cicada_ prefix", name)
		}
	}
	get := func(name string, labels ...string) (float64, bool) {
	next:
		for _, s := range samples {
			if s.name != name || len(s.labels) != len(labels)/2 {
				continue
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if s.labels[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return s.value, true
		}
		return 0, false
	}
	snap := e.runner.Snapshot()
	for _, en := range snap.Entries {
		if v, ok := get("cicada_requests_total", "method", en.Method, "name", en.Name); !ok || v != float64(en.NumRequests) {
			t.Errorf("cicada_requests_total{%s} = %v, %v; want %d", en.Name, v, ok, en.NumRequests)
		}
		if v, ok := get("cicada_request_failures_total", "method", en.Method, "name", en.Name); !ok || v != float64(en.NumFailures) {
			t.Errorf("cicada_request_failures_total{%s} = %v; want %d", en.Name, v, en.NumFailures)
		}
		if v, ok := get("cicada_response_time_seconds_count", "method", en.Method, "name", en.Name); !ok || v != float64(en.Timed()) {
			t.Errorf("cicada_response_time_seconds_count{%s} = %v; want %d", en.Name, v, en.Timed())
		}
		if v, _ := get("cicada_response_time_seconds_sum", "method", en.Method, "name", en.Name); math.Abs(v-en.TotalResponseTime/1000) > 1e-9 {
			t.Errorf("cicada_response_time_seconds_sum{%s} = %v; want %v", en.Name, v, en.TotalResponseTime/1000)
		}
	}
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"cicada_users", nil, 6},
		{"cicada_workers", []string{"state", "running"}, 3},
		{"cicada_workers", []string{"state", "missing"}, 0},
		{"cicada_state", []string{"state", "running"}, 1},
		{"cicada_state", []string{"state", "ready"}, 0},
		{"cicada_user_class_users", []string{"user_class", "WebsiteUser"}, 6},
		{"cicada_exceptions_total", nil, float64(len(snap.Exceptions))},
		{"cicada_connections", nil, 6},
		{"cicada_worker_users", []string{"worker", e.runner.Status().Workers[0].ID}, 2},
	}
	for _, c := range checks {
		if v, ok := get(c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v, %v; want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if _, ok := get("cicada_errors_total", "method", "GET", "name", "/missing", "error", "HTTPError('404 Client Error: Not Found for url: /missing')"); !ok {
		t.Errorf("no cicada_errors_total for /missing")
	}
}

// TestMetricsPromtool runs Prometheus's own linter (Debian package
// prometheus) over the exposition.
func TestMetricsPromtool(t *testing.T) {
	path := needTool(t, "promtool", "apt-get install prometheus")
	_, text := metricsEnv(t)
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}
