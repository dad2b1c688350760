package scenario

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cicada-load/cicada/thresholds"
	"gopkg.in/yaml.v3"
)

// thresholds reads the top-level thresholds: list. Each item is an
// expression in the command-line grammar (package thresholds, Parse), or
// a mapping whose threshold: is one and whose name:, method:, window:,
// abort_on_fail: and delay: set what the expression leaves out (a request
// name with any character, "}" included):
//
//	thresholds:
//	  - p99<500ms
//	  - fail_ratio<=1% abort_on_fail delay=30s
//	  - threshold: avg<200ms
//	    name: /api/items/{id}
//	    method: GET
//	    window: 30s
func (p *parser) thresholds(n *yaml.Node, field string) ([]thresholds.Threshold, error) {
	var out []thresholds.Threshold
	err := p.list(n, field, func(_ int, item *yaml.Node, f string) error {
		t, err := p.threshold(item, f)
		if err != nil {
			return err
		}
		t.Source = fmt.Sprintf("%s:%d", p.file, item.Line)
		out = append(out, t)
		return nil
	})
	return out, err
}

func (p *parser) threshold(n *yaml.Node, field string) (thresholds.Threshold, error) {
	var t thresholds.Threshold
	if n.Kind == yaml.ScalarNode {
		s, err := p.str(n, field)
		if err != nil {
			return t, err
		}
		return p.parseThreshold(n, field, s)
	}
	var (
		exprNode          *yaml.Node
		name, method      string
		window, delay     time.Duration
		abort, abortGiven bool
	)
	err := p.fields(n, field, func(key string, v *yaml.Node, f string) error {
		var err error
		switch key {
		case "threshold":
			exprNode = v
		case "name":
			name, err = p.str(v, f)
		case "method":
			method, err = p.str(v, f)
		case "window":
			window, err = p.duration(v, f, time.Second)
		case "delay":
			delay, err = p.duration(v, f, time.Second)
		case "abort_on_fail":
			abort, err = p.bool_(v, f)
			abortGiven = true
		default:
			return errUnknown
		}
		return err
	})
	if err != nil {
		return t, err
	}
	if exprNode == nil {
		return t, p.errf(n, field+".threshold", "missing: the expression, e.g. p99<500ms")
	}
	s, err := p.str(exprNode, field+".threshold")
	if err != nil {
		return t, err
	}
	if t, err = p.parseThreshold(exprNode, field+".threshold", s); err != nil {
		return t, err
	}
	twice := func(what string) error {
		return p.errf(n, field, "%s given both in the expression and as a field", what)
	}
	if name != "" || method != "" {
		if t.Name != "" {
			return t, twice("the request selector")
		}
		t.Name, t.Method = name, strings.ToUpper(method)
	}
	if window > 0 {
		if t.Window > 0 {
			return t, twice("window")
		}
		t.Window = window
	}
	if abortGiven {
		t.AbortOnFail = abort
	}
	if delay > 0 {
		if t.Delay > 0 {
			return t, twice("delay")
		}
		t.Delay = delay
	}
	if err := t.Check(); err != nil {
		return t, p.errf(n, field, "%s", strings.TrimPrefix(err.Error(), thresholds.ErrSyntax.Error()+": "))
	}
	return t, nil
}

func (p *parser) parseThreshold(n *yaml.Node, field, s string) (thresholds.Threshold, error) {
	t, err := thresholds.Parse(s)
	if err != nil {
		var msg string
		if errors.Is(err, thresholds.ErrSyntax) {
			msg = strings.TrimPrefix(err.Error(), thresholds.ErrSyntax.Error()+" ")
		} else {
			msg = err.Error()
		}
		return t, p.errf(n, field, "bad threshold %s", msg)
	}
	return t, nil
}
