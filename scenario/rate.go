package scenario

import (
	"math"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cicada-load/cicada/master"
)

// RateLoad is the scenario's optional arrival-rate form (issue 13), the
// top-level key load:
//
//	load:
//	  rate: 100           # iterations per second in the whole cluster, for the whole test
//	  max_in_flight: 50   # the users pre-allocated to run them (the cap on in-flight iterations)
//
// or, instead of rate, stages of rates (durations cumulative, as the
// user stages; the test ends after the last one). A stage holds its rate,
// or with ramp: true goes linearly from the previous stage's rate (0 for
// the first) to its own, as k6's ramping-arrival-rate:
//
//	load:
//	  max_in_flight: 200
//	  stages:
//	    - {duration: 30s, rate: 100, ramp: true}   # 0 → 100/s
//	    - {duration: 1m, rate: 500}                # 500/s until 1 min
//
// An iteration is a user's next task. The command line's --arrival-rate
// and --max-in-flight take precedence over the file.
type RateLoad struct {
	// Stages is the rate schedule (master.Options.Rate); a constant rate
	// is one stage with a zero Duration.
	Stages      []master.RateStage
	MaxInFlight int
}

func (p *parser) load(n *yaml.Node, path string) (*RateLoad, error) {
	l := &RateLoad{}
	var haveRate bool
	var rate float64
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "rate":
			rate, err = p.rate(v, field)
			haveRate = true
		case "max_in_flight":
			l.MaxInFlight, err = p.int_(v, field, 1)
		case "stages":
			l.Stages, err = p.rateStages(v, field)
		default:
			return errUnknown
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case haveRate && l.Stages != nil:
		return nil, p.errf(n, path, "give either rate or stages, not both")
	case !haveRate && l.Stages == nil:
		return nil, p.errf(n, path, "needs rate (iterations per second) or stages")
	case l.MaxInFlight == 0:
		return nil, p.errf(n, path+".max_in_flight", "missing: the users pre-allocated to run the iterations (the cap on in-flight iterations)")
	case haveRate:
		l.Stages = []master.RateStage{{Rate: rate}}
	}
	return l, nil
}

func (p *parser) rate(n *yaml.Node, field string) (float64, error) {
	r, err := p.float(n, field)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(r) || r < 0 || r > master.MaxRate {
		return 0, p.errf(n, field, "must be between 0 and %g iterations per second", float64(master.MaxRate))
	}
	return r, nil
}

func (p *parser) rateStages(n *yaml.Node, path string) ([]master.RateStage, error) {
	var out []master.RateStage
	err := p.list(n, path, func(i int, item *yaml.Node, field string) error {
		var s master.RateStage
		var haveD, haveR bool
		err := p.fields(item, field, func(key string, v *yaml.Node, f string) error {
			var err error
			switch key {
			case "duration":
				s.Duration, err = p.duration(v, f, time.Second)
				haveD = true
			case "rate":
				s.Rate, err = p.rate(v, f)
				haveR = true
			case "ramp":
				s.Ramp, err = p.bool_(v, f)
			default:
				return errUnknown
			}
			return err
		})
		if err != nil {
			return err
		}
		if !haveD || !haveR {
			return p.errf(item, field, "a rate stage needs duration and rate")
		}
		if s.Duration <= 0 || i > 0 && s.Duration <= out[i-1].Duration {
			return p.errf(item, field+".duration", "must be positive and larger than the previous stage's: durations are cumulative, the time since the start when the stage ends")
		}
		out = append(out, s)
		return nil
	})
	if err == nil && len(out) == 0 {
		return nil, p.errf(n, path, "is empty")
	}
	return out, err
}
