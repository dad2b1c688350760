package leakcheck

// park signals started, then blocks until stop is closed; it lives in a
// non-test file so that the package's own test can see it as a leak.
func park(started chan<- struct{}, stop <-chan struct{}, done chan<- struct{}) {
	close(started)
	<-stop
	close(done)
}
