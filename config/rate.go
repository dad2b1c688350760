package config

import (
	"fmt"
	"math"
)

// maxArrivalRate mirrors master.MaxRate (this leaf does not import master).
const maxArrivalRate = 1e7

// validateRate refuses arrival-rate options cicada cannot honour (issue
// 13): a rate that is not a finite number in (0, 1e7], --max-in-flight
// without a rate, a rate without a cap on in-flight iterations, a cap that
// contradicts -u, a rate on a worker (the master holds it), and a rate
// with the data plane (its users are connection records that the pacer
// cannot start). With a rate, -u takes the value of --max-in-flight.
func (p *Parser) validateRate() error {
	c := p.cfg
	rateSet := p.fs.Lookup("arrival-rate").Changed || c.ArrivalRate != 0
	switch {
	case !rateSet && c.MaxInFlight != 0:
		return fmt.Errorf("%w: argument --max-in-flight: only with --arrival-rate", ErrUsage)
	case !rateSet:
		return nil
	case math.IsNaN(c.ArrivalRate) || c.ArrivalRate <= 0 || c.ArrivalRate > maxArrivalRate:
		return fmt.Errorf("%w: argument --arrival-rate: must be a number of iterations per second in (0, %g], got %v", ErrUsage, float64(maxArrivalRate), c.ArrivalRate)
	case c.MaxInFlight < 0:
		return fmt.Errorf("%w: argument --max-in-flight: must be > 0, got %d", ErrUsage, c.MaxInFlight)
	case c.Worker:
		return fmt.Errorf("%w: --arrival-rate is the master's (or standalone's) option; a worker gets its share from the master", ErrUsage)
	case c.Dataplane != "":
		return fmt.Errorf("%w: --arrival-rate cannot be combined with --dataplane (the data plane cannot pace iterations)", ErrUsage)
	case c.MaxInFlight == 0 && !c.UsersSet:
		return fmt.Errorf("%w: --arrival-rate needs --max-in-flight N (or -u N): the users pre-allocated to run the iterations", ErrUsage)
	case c.MaxInFlight != 0 && c.UsersSet && c.Users != c.MaxInFlight:
		return fmt.Errorf("%w: --max-in-flight %d contradicts -u %d (with --arrival-rate, the users are the in-flight cap)", ErrUsage, c.MaxInFlight, c.Users)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = c.Users
	}
	c.Users, c.UsersSet = c.MaxInFlight, true
	return nil
}
