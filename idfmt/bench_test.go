package idfmt

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// Targets (reported, never a gate): the splitmix permutation adds < 50 ns
// per ID (issue 6), FF1 < 300 ns (issue 19).

var sinkI int64
var sinkS string

func BenchmarkPermutation_FF1_Apply63(b *testing.B) {
	p, _ := NewPermutation(SchemeFF1, testKey, 63)
	var x int64
	for b.Loop() {
		x++
		sinkI, _ = p.Apply(x)
	}
}

func BenchmarkPermutation_FF1_Invert63(b *testing.B) {
	p, _ := NewPermutation(SchemeFF1, testKey, 63)
	var x int64
	for b.Loop() {
		x++
		sinkI, _ = p.Invert(x)
	}
}

func BenchmarkPermutation_FF1_Apply53(b *testing.B) {
	p, _ := NewPermutation(SchemeFF1, testKey, 53)
	var x int64
	for b.Loop() {
		x++
		sinkI, _ = p.Apply(x)
	}
}

func BenchmarkPermutation_Splitmix_Apply63(b *testing.B) {
	p, _ := NewPermutation(SchemeSplitmix, testKey, 63)
	var x int64
	for b.Loop() {
		x++
		sinkI, _ = p.Apply(x)
	}
}

func BenchmarkPermutation_Splitmix_Apply53(b *testing.B) {
	p, _ := NewPermutation(SchemeSplitmix, testKey, 53)
	var x int64
	for b.Loop() {
		x++
		sinkI, _ = p.Apply(x)
	}
}

func BenchmarkBase62_Encode(b *testing.B) {
	x := int64(1 << 62)
	for b.Loop() {
		x++
		sinkS = Base62.Encode(x)
	}
}

func BenchmarkBase32_EncodeFixed(b *testing.B) {
	x := int64(1 << 62)
	for b.Loop() {
		x++
		sinkS = Base32.EncodeFixed(x)
	}
}

func BenchmarkTemplate_Format(b *testing.B) {
	tp, _ := ParseTemplate("PAY{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}")
	at := time.Now()
	for b.Loop() {
		sinkS, _ = tp.Format(at, 3, 42)
	}
}

func BenchmarkUUID_V4(b *testing.B) {
	for b.Loop() {
		u, _ := uuid.NewRandom()
		sinkS = u.String()
	}
}

func BenchmarkUUID_V7(b *testing.B) {
	for b.Loop() {
		u, _ := uuid.NewV7()
		sinkS = u.String()
	}
}
