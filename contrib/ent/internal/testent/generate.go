// Package testent is ent's generated client for frondent's tests
// (schema/). Generate it again after a change of the schema:
//
//	go generate ./internal/testent
package testent

//go:generate go run -mod=mod entgo.io/ent/cmd/ent generate ./schema
