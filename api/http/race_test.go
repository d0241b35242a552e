//go:build race

package httpapi

// raceOn: built with the race detector, whose sync.Pool drops a quarter of
// what it is given back, at random: allocation counts grow and vary.
const raceOn = true
