package frond_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/frond-id/frond"
)

func TestID_JSON(t *testing.T) {
	type row struct {
		ID     frond.ID            `json:"id"`
		Parent frond.ID            `json:"parent,omitempty"`
		Refs   map[frond.ID]string `json:"refs"`
	}
	in := row{ID: math.MaxInt64, Refs: map[frond.ID]string{7: "x"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// A string: JavaScript's numbers would round 2^63-1 to 9223372036854775808.
	if want := `{"id":"9223372036854775807","refs":{"7":"x"}}`; string(b) != want { // omitempty drops a zero ID
		t.Fatalf("%s, want %s", b, want)
	}
	var out row
	if err := json.Unmarshal(b, &out); err != nil || out.ID != in.ID || out.Refs[7] != "x" {
		t.Fatalf("%+v, %v", out, err)
	}
	// A number is read too, and null leaves the value.
	out = row{Parent: 5}
	if err := json.Unmarshal([]byte(`{"id": 1234, "parent": null}`), &out); err != nil || out.ID != 1234 || out.Parent != 5 {
		t.Fatalf("%+v, %v", out, err)
	}
	for _, bad := range []string{`"-1"`, `-1`, `"1e3"`, `1.5`, `"9223372036854775808"`, `""`, `" 12"`, `"+1"`, `true`, `"0x10"`} {
		var id frond.ID
		if err := json.Unmarshal([]byte(bad), &id); !errors.Is(err, frond.ErrInvalidID) {
			t.Errorf("%s: %v, want ErrInvalidID", bad, err)
		}
	}
}

func TestID_Forms(t *testing.T) {
	for _, id := range []frond.ID{0, 1, 61, 62, 1 << 40, math.MaxInt64} {
		if got, err := frond.ParseID(id.String()); got != id || err != nil {
			t.Errorf("ParseID(%s) = %v, %v", id, got, err)
		}
		if got, err := frond.ParseBase62(id.Base62()); got != id || err != nil || len(id.Base62()) != 11 {
			t.Errorf("base62 %q: %v, %v", id.Base62(), got, err)
		}
		if got, err := frond.ParseBase32(id.Base32()); got != id || err != nil || len(id.Base32()) != 13 {
			t.Errorf("base32 %q: %v, %v", id.Base32(), got, err)
		}
	}
	if frond.ID(61).Base62() >= frond.ID(62).Base62() {
		t.Error("base62 does not sort as the IDs")
	}
	if _, err := frond.ParseBase62("!"); !errors.Is(err, frond.ErrInvalidID) {
		t.Errorf("a bad base62: %v", err)
	}
}

func TestID_Scan(t *testing.T) {
	for _, src := range []any{int64(42), []byte("42"), "42", uint64(42)} {
		var id frond.ID
		if err := id.Scan(src); err != nil || id != 42 {
			t.Errorf("Scan(%#v) = %v, %v", src, id, err)
		}
	}
	for _, src := range []any{nil, int64(-1), "x", 4.2, []byte(""), uint64(math.MaxInt64) + 1} {
		var id frond.ID
		if err := id.Scan(src); !errors.Is(err, frond.ErrInvalidID) {
			t.Errorf("Scan(%#v): %v, want ErrInvalidID", src, err)
		}
	}
	var n sql.Null[frond.ID]
	if err := n.Scan(nil); err != nil || n.Valid {
		t.Errorf("sql.Null[frond.ID] of NULL: %+v, %v", n, err)
	}
	if v, err := frond.ID(7).Value(); v != int64(7) || err != nil {
		t.Errorf("Value = %#v, %v", v, err)
	}
}

// FuzzParseID: the parsers of outside text never panic, accept only what
// they write back the same, and agree with strconv on decimal.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "1", "9223372036854775807", "9223372036854775808", "-1", "+1", " 1", "01", "", "１", "00000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := frond.ParseID(s)
		if err == nil {
			n, serr := strconv.ParseInt(s, 10, 64)
			if serr != nil || int64(id) != n || n < 0 {
				t.Fatalf("ParseID(%q) = %d, strconv %d %v", s, id, n, serr)
			}
		}
		var j frond.ID
		if err := j.UnmarshalJSON([]byte(s)); err == nil && s != "null" {
			b, _ := j.MarshalJSON()
			var k frond.ID
			if err := k.UnmarshalJSON(b); err != nil || k != j {
				t.Fatalf("%q: %d then %s", s, j, b)
			}
		}
		for _, parse := range []func(string) (frond.ID, error){frond.ParseBase62, frond.ParseBase32} {
			if id, err := parse(s); err == nil && id < 0 {
				t.Fatalf("%q: a negative ID %d", s, id)
			}
		}
	})
}
