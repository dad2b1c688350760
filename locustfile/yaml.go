package locustfile

import (
	"bytes"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// YAML returns the module as a cicada YAML scenario in the syntax agreed
// for captures, checks and tags (doc/locustfile.md). Refused classes are
// listed in a comment at the top. only, if not nil, keeps the users for
// which it returns true.
func (m *Module) YAML(only func(*User) bool) []byte {
	root := mapping()
	users := &yaml.Node{Kind: yaml.SequenceNode}
	for _, u := range m.Users {
		if only != nil && !only(u) {
			continue
		}
		users.Content = append(users.Content, userNode(u))
	}
	add(root, "users", users)
	if len(m.Stages) > 0 {
		st := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range m.Stages {
			n := mapping()
			add(n, "duration", scalar(pyNum(s.Duration)))
			add(n, "users", scalar(strconv.FormatInt(s.Users, 10)))
			if s.SpawnRate > 0 {
				add(n, "spawn_rate", scalar(pyNum(s.SpawnRate)))
			}
			st.Content = append(st.Content, n)
		}
		add(root, "stages", st)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# cicada scenario translated from %s by cicada convert\n", m.File)
	for _, e := range m.Refused {
		fmt.Fprintf(&b, "# not translated: %s\n", oneLine(e.Error()))
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(root) // encoding a node tree of scalars, maps and lists does not fail
	_ = enc.Close()
	return b.Bytes()
}

func oneLine(s string) string {
	return string(bytes.ReplaceAll([]byte(s), []byte("\n"), []byte(" ")))
}

func pyNum(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// str is a string scalar that stays a string (quoted when YAML would read
// it as something else).
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, str(key), v)
}

func userNode(u *User) *yaml.Node {
	n := mapping()
	add(n, "name", str(u.Name))
	if u.Weight > 0 {
		add(n, "weight", scalar(strconv.Itoa(u.Weight)))
	}
	if u.FixedCount > 0 {
		add(n, "fixed_count", scalar(strconv.Itoa(u.FixedCount)))
	}
	if u.Host != "" {
		add(n, "host", str(u.Host))
	}
	if u.Wait != "" {
		add(n, "wait", str(u.Wait))
	}
	if u.Sequential {
		add(n, "sequential", scalar("true"))
	}
	if len(u.Vars) > 0 {
		vars := mapping()
		for _, v := range u.Vars {
			g := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			list := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			if v.Choice == nil {
				list.Content = append(list.Content, scalar(strconv.FormatInt(v.Lo, 10)), scalar(strconv.FormatInt(v.Hi, 10)))
				add(g, "random_int", list)
			} else {
				for _, c := range v.Choice {
					list.Content = append(list.Content, str(escapeDollar(c)))
				}
				add(g, "random_choice", list)
			}
			add(g, "each", scalar("request"))
			add(vars, v.Name, g)
		}
		add(n, "variables", vars)
	}
	if len(u.OnStart) > 0 {
		add(n, "on_start", requestsNode(u.OnStart))
	}
	if len(u.OnStop) > 0 {
		add(n, "on_stop", requestsNode(u.OnStop))
	}
	tasks := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range u.Tasks {
		tn := mapping()
		add(tn, "name", str(t.Name))
		if t.Weight != 1 {
			add(tn, "weight", scalar(strconv.Itoa(t.Weight)))
		}
		if len(t.Tags) > 0 {
			tags := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, g := range t.Tags {
				tags.Content = append(tags.Content, str(g))
			}
			add(tn, "tags", tags)
		}
		add(tn, "requests", requestsNode(t.Requests))
		tasks.Content = append(tasks.Content, tn)
	}
	add(n, "tasks", tasks)
	return n
}

func requestsNode(reqs []*Request) *yaml.Node {
	l := &yaml.Node{Kind: yaml.SequenceNode}
	if len(reqs) == 0 {
		l.Style = yaml.FlowStyle
	}
	for _, r := range reqs {
		n := mapping()
		if r.Method != "GET" {
			add(n, "method", str(r.Method))
		}
		add(n, "path", str(r.Path))
		if r.Name != "" {
			add(n, "name", str(r.Name))
		}
		headers := r.Headers
		if r.Form {
			headers = append(append([]KV{}, headers...), KV{"Content-Type", "application/x-www-form-urlencoded"})
		}
		if len(headers) > 0 {
			h := mapping()
			for _, kv := range headers {
				add(h, kv.Key, str(kv.Value))
			}
			add(n, "headers", h)
		}
		if r.HasJSON {
			add(n, "json", plainNode(r.JSON))
		}
		if r.HasBody {
			add(n, "body", str(r.Body))
		}
		if len(r.Captures) > 0 {
			c := mapping()
			for _, cp := range r.Captures {
				src := mapping()
				if cp.Header != "" {
					add(src, "header", str(cp.Header))
				} else {
					add(src, "json", str(cp.JSONPath))
				}
				src.Style = yaml.FlowStyle
				add(c, cp.Name, src)
			}
			add(n, "capture", c)
		}
		if ch := r.Checks; ch != nil && (len(ch.Status) > 0 || len(ch.BodyContains) > 0 || len(ch.JSON) > 0 || ch.MaxResponseTime > 0) {
			c := mapping()
			if len(ch.Status) == 1 {
				add(c, "status", scalar(strconv.Itoa(ch.Status[0])))
			} else if len(ch.Status) > 1 {
				s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
				for _, code := range ch.Status {
					s.Content = append(s.Content, scalar(strconv.Itoa(code)))
				}
				add(c, "status", s)
			}
			if len(ch.BodyContains) > 0 {
				s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
				for _, b := range ch.BodyContains {
					s.Content = append(s.Content, str(b))
				}
				add(c, "body_contains", s)
			}
			if ch.MaxResponseTime > 0 {
				add(c, "max_response_time", scalar(pyNum(ch.MaxResponseTime)))
			}
			if len(ch.JSON) > 0 {
				j := mapping()
				for _, jc := range ch.JSON {
					add(j, jc.Path, plainNode(jc.Value))
				}
				add(c, "json", j)
			}
			add(n, "checks", c)
		}
		l.Content = append(l.Content, n)
	}
	return l
}

// plainNode converts a JSON value to YAML with its type kept.
func plainNode(v any) *yaml.Node {
	switch v := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v, 10)}
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if s == strconv.FormatInt(int64(v), 10) {
			s += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
	case string:
		return str(v)
	case []any:
		l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range v {
			l.Content = append(l.Content, plainNode(x))
		}
		return l
	case *orderedMap:
		m := mapping()
		m.Style = yaml.FlowStyle
		for i, k := range v.keys {
			add(m, k, plainNode(v.vals[i]))
		}
		return m
	}
	return str(fmt.Sprint(v))
}
