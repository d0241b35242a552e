//go:build !race

package keyseq_test

const raceOn = false
