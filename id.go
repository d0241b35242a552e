package frond

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/frond-id/frond/idfmt"
)

// ID is a frond ID (segment or snowflake) as Go code keeps it: in a
// struct's primary key, a database column and a JSON document. It is an
// int64 underneath, so it sorts, compares and indexes as one.
//
//   - database/sql: it is a BIGINT column's value (driver.Valuer) and scans
//     from one, or from the decimal text some drivers give (sql.Scanner). A
//     NULL is refused: a nullable column is sql.Null[frond.ID].
//   - JSON: it is written as a string ("1234567890123456789"), as frond's
//     own id_str, since JavaScript's numbers lose integers past 2^53; it is
//     read from a string or a number.
//   - text (encoding.TextMarshaler): decimal, so it is a map key, a YAML or
//     XML value, a URL parameter.
//
// Base62 and Base32 are frond's short, sortable string forms of it.
type ID int64

// ErrInvalidID means a text or a value is not a frond ID.
var ErrInvalidID = errors.New("not a frond ID")

// String is the ID in decimal.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// Int64 is the ID as an int64.
func (id ID) Int64() int64 { return int64(id) }

// IsZero reports whether the ID is unset (frond hands out no ID 0).
func (id ID) IsZero() bool { return id == 0 }

// Base62 is the ID in frond's base62 form: 11 characters, sorting as the
// IDs do (form=base62).
func (id ID) Base62() string { return idfmt.Base62.EncodeFixed(int64(id)) }

// Base32 is the ID in frond's Crockford base32 form: 13 characters,
// sorting as the IDs do (form=base32).
func (id ID) Base32() string { return idfmt.Base32.EncodeFixed(int64(id)) }

// ParseID reads an ID in decimal: digits only (no sign, no space), at most
// 2^63-1. Frond's IDs are never negative.
func ParseID(s string) (ID, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: an empty text", ErrInvalidID)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %s: decimal digits only", ErrInvalidID, quoteID(s))
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: above 2^63-1", ErrInvalidID, quoteID(s))
	}
	return ID(n), nil
}

// ParseBase62 reads an ID in frond's base62 form (ID.Base62).
func ParseBase62(s string) (ID, error) { return parseForm(idfmt.Base62, s) }

// ParseBase32 reads an ID in frond's base32 form (ID.Base32); it ignores
// case and hyphens, and reads I and L as 1, O as 0.
func ParseBase32(s string) (ID, error) { return parseForm(idfmt.Base32, s) }

func parseForm(e *idfmt.Encoding, s string) (ID, error) {
	n, err := e.Decode(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidID, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %s: negative", ErrInvalidID, quoteID(s))
	}
	return ID(n), nil
}

// quoteID quotes a text for an error, cut to 40 bytes: it is outside
// input.
func quoteID(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}

// Value implements driver.Valuer: a BIGINT.
func (id ID) Value() (driver.Value, error) { return int64(id), nil }

// Scan implements sql.Scanner: from an integer, or the decimal text (as
// []byte or string) some drivers give for BIGINT columns.
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("%w: %d: negative", ErrInvalidID, v)
		}
		*id = ID(v)
		return nil
	case uint64: // MySQL's BIGINT UNSIGNED in the text protocol
		if v > math.MaxInt64 {
			return fmt.Errorf("%w: %d: above 2^63-1", ErrInvalidID, v)
		}
		*id = ID(v)
		return nil
	case []byte:
		n, err := ParseID(string(v))
		if err != nil {
			return err
		}
		*id = n
		return nil
	case string:
		n, err := ParseID(v)
		if err != nil {
			return err
		}
		*id = n
		return nil
	case nil:
		return fmt.Errorf("%w: NULL (a nullable column scans into sql.Null[frond.ID])", ErrInvalidID)
	}
	return fmt.Errorf("%w: a %T from the database", ErrInvalidID, src)
}

// MarshalText implements encoding.TextMarshaler: decimal.
func (id ID) MarshalText() ([]byte, error) { return strconv.AppendInt(nil, int64(id), 10), nil }

// UnmarshalText implements encoding.TextUnmarshaler: decimal (ParseID).
func (id *ID) UnmarshalText(b []byte) error {
	n, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = n
	return nil
}

// MarshalJSON writes the ID as a JSON string: "1234567890123456789".
func (id ID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 21)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a JSON string of decimal digits or a JSON number
// (an integer); null leaves the ID as it is, as encoding/json does for
// other values.
func (id *ID) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := ParseID(s)
	if err != nil {
		return err
	}
	*id = n
	return nil
}

// IDSource hands out frond IDs to code that stores them: the ORM
// integrations (docs/integrations.md) take one. The Go client
// (github.com/frond-id/frond/client: segment IDs from its leases, in
// process) is one; so is client/httpsource (one HTTP call a batch, for a
// service that cannot lease or speak gRPC).
type IDSource interface {
	// Next is the next segment ID of tag.
	Next(ctx context.Context, tag string) (int64, error)
	// NextN is n segment IDs of tag, in order: a batch insert's.
	NextN(ctx context.Context, tag string, n int) ([]int64, error)
	// Snowflake is n snowflake IDs.
	Snowflake(ctx context.Context, n int) ([]int64, error)
}
