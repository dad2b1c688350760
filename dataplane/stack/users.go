package stack

// Users: a client stack with Config.Program runs one Locust user per
// connection record. See Program for the life of a user.

// LaunchClass opens up to n users of class at now, taking the records in
// turn as Launch does (a record in use, or holding a live user, is skipped
// and counted in LaunchSkipped). It returns how many SYNs it sent: none
// before the next hop is resolved, in Server mode, or for a class outside
// the Program (without a Program, only class 0 exists and LaunchClass(now,
// 0, n) is Launch(now, n)).
func (s *Stack) LaunchClass(now int64, class, n int) int {
	return 0
}

// StopClass stops up to n running users of class at now, the most recently
// launched first: a user waiting between tasks sends its FIN now; one
// awaiting a response finishes that response (bounded by IdleTimeout), then
// sends its FIN; one still connecting sends its FIN once connected; one
// waiting to reconnect is freed at once. It returns how many users it
// marked. The cost is O(n): each class keeps its live users in a list linked
// through the records, so the table is never scanned.
func (s *Stack) StopClass(now int64, class, n int) int {
	return 0
}

// Users returns the users of class open or opening now, not yet stopping
// (0 for a class outside the Program). O(1).
func (s *Stack) Users(class int) int {
	return 0
}

// SecondRound makes every established user that waits between tasks send
// its last request again now, on the same connection (no new SYN); after the
// response the user goes on waiting until its wait ends. It returns how many
// requests it sent; Counters.SecondRoundSent, SecondRoundOK (a response on
// the same connection, accepted) and SecondRoundFailed count them. The cost
// is one walk of the live users' lists, O(users).
func (s *Stack) SecondRound(now int64) int {
	return 0
}
