package locustfile

// shape reads a LoadTestShape class whose tick() walks a stage table:
//
//	stages = [{"duration": 60, "users": 10, "spawn_rate": 10}, ...]
//	def tick(self):
//	    run_time = self.get_run_time()
//	    for stage in self.stages:
//	        if run_time < stage["duration"]:
//	            return (stage["users"], stage["spawn_rate"])   # or via a name
//	    return None
//
// Any other tick() refuses the file: the shape drives the whole test.
func (r *reader) shape(c *classInfo) ([]Stage, error) {
	name := c.stmt.Name
	bad := func(p Pos, construct, why string) error {
		return r.errf(p, "", "LoadTestShape "+name+": "+construct,
			"%s; cicada reads a stage table (stages = [{duration, users, spawn_rate}] walked by tick()) as the scenario's stages: "+
				"write other shapes as YAML stages, or keep this locustfile on a Python master", why)
	}
	if c.err != nil {
		return nil, bad(Pos{c.err.Line, c.err.Col}, c.err.Construct, c.err.Msg)
	}
	tick := r.method(c, "tick")
	if tick == nil {
		return nil, bad(c.stmt.P, "no tick()", "a shape needs tick()")
	}
	for m, d := range c.methods {
		if m != "tick" {
			return nil, bad(d.P, "def "+m, "only tick() is read")
		}
	}
	if !isStageTick(tick) {
		return nil, bad(tick.P, "def tick", "tick() is not the stage-table walk")
	}
	v, owner := r.attr(c, "stages")
	if v == nil {
		return nil, bad(c.stmt.P, "no stages", "a stage table needs stages = [...]")
	}
	x, err := r.constValue(v, owner)
	list, ok := x.([]any)
	if err != nil || !ok || len(list) == 0 {
		return nil, bad(v.pos(), "stages", "must be a non-empty list literal of dicts")
	}
	var out []Stage
	for i, it := range list {
		m, ok := it.(*orderedMap)
		if !ok {
			return nil, bad(v.pos(), "stages", "each stage must be a dict")
		}
		var st Stage
		for j, k := range m.keys {
			num, isNum := toFloat(m.vals[j])
			switch k {
			case "duration":
				st.Duration = num
			case "users":
				n, isInt := m.vals[j].(int64)
				if !isInt || n < 0 {
					return nil, bad(v.pos(), "stages", "users must be a non-negative integer")
				}
				st.Users = n
			case "spawn_rate":
				st.SpawnRate = num
			default:
				return nil, bad(v.pos(), "stage key "+k, "cicada's stages take duration, users and spawn_rate")
			}
			if !isNum || num < 0 {
				return nil, bad(v.pos(), "stage "+k, "must be a non-negative number")
			}
		}
		if _, ok := m.get("duration"); !ok {
			return nil, bad(v.pos(), "stages", "each stage needs duration")
		}
		if _, ok := m.get("users"); !ok {
			return nil, bad(v.pos(), "stages", "each stage needs users")
		}
		if i > 0 && st.Duration <= out[i-1].Duration {
			return nil, bad(v.pos(), "stages", "durations must increase (they are times since the start)")
		}
		out = append(out, st)
	}
	return out, nil
}

// isStageTick recognises the stage-table tick() of Locust's examples
// (custom_shape/stages.py): a for loop over self.stages whose if compares
// the run time with stage["duration"] and returns the stage's users and
// spawn_rate, then return None.
func isStageTick(d *defStmt) bool {
	if len(d.Params) != 1 {
		return false
	}
	self := d.Params[0].Name
	var loop *forStmt
	runTime := ""
	for i, s := range d.Body {
		switch s := s.(type) {
		case *exprStmt:
			if i != 0 {
				return false
			}
		case *assignStmt:
			n, ok := s.Targets[0].(*nameExpr)
			c, isCall := s.Value.(*callExpr)
			if !ok || !isCall || describeExpr(c.Fn) != self+".get_run_time" || loop != nil {
				return false
			}
			runTime = n.ID
		case *forStmt:
			loop = s
		case *returnStmt:
			k, ok := s.X.(*constExpr)
			if s.X != nil && (!ok || k.V != nil || k.Ellipsis) || i != len(d.Body)-1 {
				return false
			}
		default:
			return false
		}
	}
	if loop == nil || describeExpr(loop.Iter) != self+".stages" || len(loop.Body) != 1 || loop.Else != nil {
		return false
	}
	st, ok := loop.Target.(*nameExpr)
	if !ok {
		return false
	}
	ifs, ok := loop.Body[0].(*ifStmt)
	if !ok || ifs.Else != nil {
		return false
	}
	cmp, ok := ifs.Test.(*compareExpr)
	if !ok || len(cmp.Ops) != 1 || cmp.Ops[0] != "<" {
		return false
	}
	lhs := describeExpr(cmp.X)
	if lhs != runTime && lhs != self+".get_run_time(...)" {
		return false
	}
	if describeExpr(cmp.Ys[0]) != st.ID+"['duration']" {
		return false
	}
	var ret expr
	local := map[string]expr{}
	for _, s := range ifs.Body {
		switch s := s.(type) {
		case *assignStmt:
			n, ok := s.Targets[0].(*nameExpr)
			if !ok {
				return false
			}
			local[n.ID] = s.Value
		case *returnStmt:
			ret = s.X
		default:
			return false
		}
	}
	if n, ok := ret.(*nameExpr); ok {
		ret = local[n.ID]
	}
	tu, ok := ret.(*tupleExpr)
	if !ok || len(tu.Elts) != 2 {
		return false
	}
	return describeExpr(tu.Elts[0]) == st.ID+"['users']" && describeExpr(tu.Elts[1]) == st.ID+"['spawn_rate']"
}
