// Package stripes sizes and picks the stripes of a value that every core
// writes on the hot path (a count, a histogram, a budget's credit): one
// slot per stripe on its own cache line, each write to a slot picked at
// random, a read adding them up. It holds the one rule of how many.
package stripes

import (
	"math/rand/v2"
	"runtime"
)

// Count returns how many stripes to make: twice the cores (two random
// picks by one core's goroutines rarely meet another core's), at least
// least, at most 128, a power of two.
func Count(least int) int {
	n := 1
	for n < least || n < 2*runtime.GOMAXPROCS(0) && n < 128 {
		n *= 2
	}
	return n
}

// Pick returns a random stripe of n (a power of two, from Count).
func Pick(n int) int { return int(rand.Uint32() & uint32(n-1)) }
