// Package schema is the ent schema of frondent's tests: entities whose IDs
// come from frond.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"

	frondent "github.com/frond-id/frond/contrib/ent"
)

// Order takes its ID from frond's segment tag "order".
type Order struct{ ent.Schema }

// Mixin of Order.
func (Order) Mixin() []ent.Mixin { return []ent.Mixin{frondent.IDMixin{}} }

// Fields of Order.
func (Order) Fields() []ent.Field { return []ent.Field{field.String("item")} }

// Event takes a snowflake ID.
type Event struct{ ent.Schema }

// Mixin of Event.
func (Event) Mixin() []ent.Mixin { return []ent.Mixin{frondent.IDMixin{}} }

// Fields of Event.
func (Event) Fields() []ent.Field { return []ent.Field{field.String("name")} }

// Note keeps ent's own auto-increment ID: the hook leaves it alone.
type Note struct{ ent.Schema }

// Fields of Note.
func (Note) Fields() []ent.Field { return []ent.Field{field.String("text")} }
