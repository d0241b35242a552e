// Package sqlc is an example of frond.ID with sqlc (docs/integrations.md):
// sqlc.yaml overrides the key column's type to frond.ID, and db/ is what
// sqlc v1.31.1 generated from schema.sql and query.sql (sqlc generate, in
// this directory). The example test inserts and reads an order through
// the generated code on SQLite.
package sqlc
