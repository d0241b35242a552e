// Package frondgorm fills frond IDs into GORM models before they are
// created: the primary keys (and other fields) that name a frond tag in
// their struct tag, and with Options.PrimaryKeys every model's zero
// integer primary key.
//
//	src, _ := client.New(client.Options{Servers: []string{"id-1:9090"}})
//	db.Use(frondgorm.New(src, frondgorm.Options{}))
//
//	type Order struct {
//		ID   frond.ID `gorm:"primaryKey;autoIncrement:false" frond:"segment:order"`
//		Item string
//	}
//	db.Create(&Order{Item: "tea"})        // ID from tag order
//	db.Create(&[]Order{{...}, {...}})     // one batch call for the slice
//
// A field's struct tag is frond:"segment:TAG" (segment IDs of TAG) or
// frond:"snowflake". Only zero fields are filled: a value the code set is
// kept. When frond cannot give the IDs, the insert does not happen and
// db.Error says why. docs/integrations.md has the rest.
package frondgorm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/frond-id/frond"
)

// Options configure the plugin.
type Options struct {
	// PrimaryKeys fills every model's zero integer primary key that has no
	// frond struct tag, with segment IDs of the tag TagFor names: a whole
	// application's tables on frond without a struct tag each. A composite
	// key is left alone (tag its field to fill one part).
	PrimaryKeys bool
	// TagFor names the segment tag of a table's primary key under
	// PrimaryKeys; nil: the table's name.
	TagFor func(table string) string
}

// Plugin is a gorm.Plugin.
type Plugin struct {
	src frond.IDSource
	o   Options
}

// New returns the plugin taking IDs from src: the Go client
// (github.com/frond-id/frond/client, leased, in process) or
// client/httpsource.
func New(src frond.IDSource, o Options) *Plugin { return &Plugin{src: src, o: o} }

// Name implements gorm.Plugin.
func (p *Plugin) Name() string { return "frond" }

// Initialize implements gorm.Plugin: a callback before GORM's create.
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p.src == nil {
		return ErrNoSource
	}
	return db.Callback().Create().Before("gorm:create").Register("frond:ids", p.fill)
}

// maxBatch is the most IDs asked for in one call (the HTTP API's limit).
const maxBatch = 10_000

// source is where a field's IDs come from.
type source struct {
	tag       string // a segment tag; "" with snowflake
	snowflake bool
}

func (s source) String() string {
	if s.snowflake {
		return "snowflake IDs"
	}
	return fmt.Sprintf("segment IDs of tag %q", s.tag)
}

// parseTag reads a field's frond struct tag.
func parseTag(v string) (source, error) {
	switch {
	case v == "snowflake":
		return source{snowflake: true}, nil
	case strings.HasPrefix(v, "segment:"):
		tag := strings.TrimPrefix(v, "segment:")
		if err := frond.ValidateTagName(tag); err != nil {
			return source{}, err
		}
		return source{tag: tag}, nil
	}
	return source{}, fmt.Errorf(`frond:%q: write frond:"segment:TAG" or frond:"snowflake"`, v)
}

// sourceOf is where field's IDs come from, if anywhere.
func (p *Plugin) sourceOf(sch *schema.Schema, f *schema.Field) (source, bool, error) {
	if v, ok := f.Tag.Lookup("frond"); ok {
		s, err := parseTag(v)
		if err == nil && !integer(f.FieldType) {
			err = fmt.Errorf("it is a %s: frond IDs are integers (frond.ID, int64, uint64)", f.FieldType)
		}
		if err != nil {
			return source{}, false, fmt.Errorf("frond: field %s.%s: %w", sch.Name, f.Name, err)
		}
		return s, true, nil
	}
	// A key of one field only: a zero part of a composite key (a line
	// number 0, a foreign key) is not an ID to make up.
	if p.o.PrimaryKeys && f.PrimaryKey && len(sch.PrimaryFields) == 1 && integer(f.FieldType) {
		tag := sch.Table
		if p.o.TagFor != nil {
			tag = p.o.TagFor(sch.Table)
		}
		return source{tag: tag}, true, nil
	}
	return source{}, false, nil
}

func integer(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int64, reflect.Uint64, reflect.Int, reflect.Uint:
		return true
	}
	return false
}

// slot is a zero field of one row, to be filled.
type slot struct {
	field *schema.Field
	row   reflect.Value
}

// fill gives the zero frond fields of the rows being created their IDs:
// per source, one call for all the rows (in batches of maxBatch).
func (p *Plugin) fill(db *gorm.DB) {
	if db.Error != nil || db.Statement.Schema == nil {
		return
	}
	sch := db.Statement.Schema
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var order []source
	slots := map[source][]slot{}
	for _, f := range sch.Fields {
		src, ok, err := p.sourceOf(sch, f)
		if err != nil {
			db.AddError(err)
			return
		}
		if !ok {
			continue
		}
		rows(db.Statement.ReflectValue, func(row reflect.Value) {
			if _, zero := f.ValueOf(ctx, row); zero {
				if _, seen := slots[src]; !seen {
					order = append(order, src)
				}
				slots[src] = append(slots[src], slot{f, row})
			}
		})
	}
	for _, src := range order {
		todo := slots[src]
		for len(todo) > 0 {
			n := min(len(todo), maxBatch)
			ids, err := p.take(ctx, src, n)
			if err == nil && len(ids) != n {
				err = fmt.Errorf("%d IDs answered for %d", len(ids), n)
			}
			if err != nil {
				db.AddError(fmt.Errorf("frond: %d %s for table %s: %w (nothing was inserted)", n, src, sch.Table, err))
				return
			}
			for i, s := range todo[:n] {
				if err := s.field.Set(ctx, s.row, ids[i]); err != nil {
					db.AddError(fmt.Errorf("frond: set %s.%s: %w", sch.Name, s.field.Name, err))
					return
				}
			}
			todo = todo[n:]
		}
	}
}

func (p *Plugin) take(ctx context.Context, src source, n int) ([]int64, error) {
	if src.snowflake {
		return p.src.Snowflake(ctx, n)
	}
	if n == 1 {
		id, err := p.src.Next(ctx, src.tag)
		return []int64{id}, err
	}
	return p.src.NextN(ctx, src.tag, n)
}

// rows calls f with each row of v: a struct, or the structs of a slice or
// an array (through pointers).
func rows(v reflect.Value, f func(reflect.Value)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		f(v)
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			rows(v.Index(i), f)
		}
	}
}

// ErrNoSource is the plugin's error for a nil source.
var ErrNoSource = errors.New("frondgorm: no IDSource")
