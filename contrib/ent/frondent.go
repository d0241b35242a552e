// Package frondent gives ent entities their IDs from frond, with context
// and error handling: ent's DefaultFunc takes no context and cannot fail, a
// hook on create can.
//
//	// in the schema: an int64 ID, frond's
//	func (Order) Mixin() []ent.Mixin { return []ent.Mixin{frondent.IDMixin{}} }
//
//	// at start: one hook for every entity type
//	src, _ := client.New(client.Options{Servers: []string{"id-1:9090"}})
//	db.Use(frondent.Hook(src, frondent.Options{}))
//	db.Order.Create().SetItem("tea").Save(ctx) // ID from frond tag "order"
//
// An entity created with an ID set keeps it. When frond cannot give the ID,
// Save fails with frond's error and nothing is inserted.
// docs/integrations.md has the rest.
package frondent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"

	"github.com/frond-id/frond"
)

// IDMixin declares an entity's ID as an int64 that frond gives (Hook): a
// positive, immutable BIGINT primary key, not auto-incremented: no
// AUTO_INCREMENT on MySQL, no identity on PostgreSQL (ent makes an int64
// key one by default; a table GORM or sqlc created with a plain BIGINT key
// then failed ent's migration: "unexpected attribute change (expect
// IDENTITY)").
type IDMixin struct{ mixin.Schema }

// notIncremental is the annotation of IDMixin's key.
var notIncremental = false

// Fields implements ent.Mixin.
func (IDMixin) Fields() []ent.Field {
	return []ent.Field{field.Int64("id").Positive().Immutable().Comment("from frond (frondent.Hook)").
		Annotations(entsql.Annotation{Incremental: &notIncremental})}
}

// Options say which IDs each entity type takes.
type Options struct {
	// Tags maps an entity type (ent's name: "Order") to its segment tag.
	Tags map[string]string
	// Snowflake lists the types whose IDs are snowflake IDs.
	Snowflake []string
	// TagFor names the tag of a type in neither; nil: the type's name in
	// lower case ("Order": "order").
	TagFor func(typ string) string
}

// idMutation is a create mutation of an entity whose ID is an int64 set by
// the code: what ent generates for IDMixin's field.
type idMutation interface {
	SetID(int64)
	ID() (int64, bool)
}

// Hook returns an ent hook (db.Use) that gives every entity created
// without an ID one from src: the Go client (leased, in process) or
// client/httpsource. Entities whose ID is not an int64 the code sets are
// left to ent.
func Hook(src frond.IDSource, o Options) ent.Hook {
	return func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			im, ok := m.(idMutation)
			if !ok || !m.Op().Is(ent.OpCreate) {
				return next.Mutate(ctx, m)
			}
			if _, set := im.ID(); set {
				return next.Mutate(ctx, m)
			}
			id, what, err := take(ctx, src, o, m.Type())
			if err != nil {
				return nil, fmt.Errorf("frond: the ID of a new %s (%s): %w (nothing was inserted)", m.Type(), what, err)
			}
			im.SetID(id)
			return next.Mutate(ctx, m)
		})
	}
}

func take(ctx context.Context, src frond.IDSource, o Options, typ string) (int64, string, error) {
	if slices.Contains(o.Snowflake, typ) {
		ids, err := src.Snowflake(ctx, 1)
		if err == nil && len(ids) != 1 {
			err = fmt.Errorf("%d IDs answered for 1", len(ids))
		}
		if err != nil {
			return 0, "a snowflake ID", err
		}
		return ids[0], "a snowflake ID", nil
	}
	tag, ok := o.Tags[typ]
	if !ok && o.TagFor != nil {
		tag = o.TagFor(typ)
	} else if !ok {
		tag = strings.ToLower(typ)
	}
	what := fmt.Sprintf("a segment ID of tag %q", tag)
	id, err := src.Next(ctx, tag)
	return id, what, err
}
