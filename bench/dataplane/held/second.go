//go:build linux

package main

import "github.com/cicada-load/cicada/dataplane/stack"

// secondRound would send one more request on every held connection (RFC
// 3511 §5.2). The stack has no second round yet (engineer B's
// Stack.SecondRound); until it lands the report says so.
func secondRound(*stack.Stack) string {
	return "not run: the stack has no SecondRound yet"
}
