package probe

import (
	"fmt"
	"time"
)

// MaxArrivals bounds a rate trial's arrivals (rate × Duration): a load
// above it is refused (ErrOptions), never run as another number of
// arrivals. 16.7 million (a mix's schedule bound too) is 140,000 per second
// for two minutes, and bounds TPS's queue of arrivals (32 bytes each).
const MaxArrivals = 1 << 24

// Due returns when arrival i (from 0) of a trial at rate per second is due,
// relative to the trial's start.
func Due(i int, rate float64) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / rate)
}

// Arrivals returns how many arrivals a trial of d at rate per second has
// (at least 1).
func Arrivals(rate float64, d time.Duration) int {
	n := int(rate * d.Seconds())
	return max(n, 1)
}

// BoundedArrivals is Arrivals of a trial at rate for d, or ErrOptions when
// they are more than MaxArrivals (what names the load): every rate trial,
// kernel or data plane, takes its count from it, so that no load wraps.
func BoundedArrivals(what string, rate float64, d time.Duration) (int, error) {
	if x := rate * d.Seconds(); !(x <= MaxArrivals) {
		return 0, fmt.Errorf("%w: %s %v for %v is %.3g arrivals, more than %d a trial may have", ErrOptions, what, rate, d, x, MaxArrivals)
	}
	return Arrivals(rate, d), nil
}

// pace issues n arrivals at rate from start, calling issue(i, due) for each
// when it is due (due is absolute), and counts those issued more than tol
// late. It returns early, with the arrivals issued, when stop is closed.
func pace(n int, rate float64, start time.Time, tol time.Duration, stop <-chan struct{}, issue func(i int, due time.Time)) (issued, late int) {
	return paceBy(n, func(i int) time.Duration { return Due(i, rate) }, start, tol, stop, issue)
}

// paceBy is pace with arrival i due at dueOf(i) after start (not
// decreasing in i).
func paceBy(n int, dueOf func(i int) time.Duration, start time.Time, tol time.Duration, stop <-chan struct{}, issue func(i int, due time.Time)) (issued, late int) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for i := 0; i < n; i++ {
		select { // seen even when every arrival is already due
		case <-stop:
			return issued, late
		default:
		}
		due := start.Add(dueOf(i))
		if wait := time.Until(due); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-stop:
				return issued, late
			}
		}
		// Late whether it was found due or woke late from its timer (a
		// pacer descheduled while asleep).
		if time.Since(due) > tol {
			late++
		}
		issue(i, due)
		issued++
	}
	return issued, late
}
