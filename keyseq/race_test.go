//go:build race

package keyseq_test

// raceOn: the race detector makes each call ~10 times slower.
const raceOn = true
