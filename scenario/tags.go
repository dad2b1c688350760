package scenario

import (
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// tags reads a `tags:` value: a list of tag names (or one name). A tag is
// a non-empty string without spaces or commas, the separators of -T/-E.
func (p *parser) tags(n *yaml.Node, field string) ([]string, error) {
	list, err := p.strOrList(n, field)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, tag := range list {
		if tag == "" || strings.ContainsAny(tag, " ,\t\n") {
			at, f := n, field
			if n.Kind == yaml.SequenceNode {
				at, f = n.Content[i], field+"["+strconv.Itoa(i)+"]"
			}
			return nil, p.errf(at, f, "tag %q: must be non-empty, without spaces or commas (the separators of -T/--tags)", tag)
		}
		if !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	return out, nil
}

// mergeTags returns a task's tags with its class's (Locust's @tag on a
// TaskSet tags each of its tasks), without duplicates.
func mergeTags(class, task []string) []string {
	if len(class) == 0 {
		return task
	}
	out := slices.Clone(task)
	for _, tag := range class {
		if !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	return out
}
