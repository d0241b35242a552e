// Package cosidstore is the frond.SegmentStore on CosId's own segment
// storage (Ahoo-Wang/CosId 3.2.1), so that frond nodes and CosId
// applications hand out the IDs of one segment name from one counter and
// never the same ID: the JDBC distributor's table
//
//	cosid(name, last_max_id, last_fetch_time)      (cosid-jdbc, JdbcIdSegmentInitializer)
//
// on MySQL/MariaDB (CosId's own DDL and statements) and PostgreSQL (the
// same statements in its dialect: CosId ships none), and the Redis
// distributor's key
//
//	cosid:{<namespace>.<name>}.adder               (cosid-spring-redis, SpringRedisIdSegmentDistributor)
//
// A frond tag is CosId's segment name as CosId writes it, namespace and all:
// the tag "cosid.order" is CosId's segment order of the namespace cosid
// (its default), and a date-grouped segment is the tag
// "cosid.order@20261128". The same tag is what CosId's proxy clients name
// /segments/cosid/order, so every way in reaches one counter. CosId's counter is the last ID
// handed out (its segments are (max-step, max]) where frond's max_id is
// the first not handed out, so a tag's max_id reads as last_max_id+1 and
// a segment raised to M is [M-step+1, M+1): the same IDs CosId would hand
// out of it, none shared with the segment before or after.
//
// CosId keeps nothing but the counter. frond keeps each tag's step and
// description beside it (the table frond_cosid_tag, or the hash
// cosid:{<namespace>.<name>}.frond); a name CosId created has the URL's
// frond_step (default 1000) until an update sets one. Only plain segment
// tags: a mapping (mist, opaque) would hand out other numbers than CosId's
// from the same counter, and a sequence tag's mode has nowhere to live.
// A name missing from the table is refused as CosId refuses it
// ("name:[cosid.order] missing."), and creating a tag inserts the row as
// CosId's initializer does (its offset is the tag's max_id - 1; an
// existing row is never reset).
//
// URLs:
//
//	cosid+mysql://user:pass@host:3306/db[?frond_step=1000&...]
//	cosid+postgres://user:pass@host:5432/db[?...]   (also cosid+postgresql://)
//	cosid+redis://[user:pass@]host:6379/0[?...]     (also cosid+rediss://)
//
// with the parameters of store/sqlstore (frond_timeout, frond_max_conns,
// frond_retries) and store/redisstore (frond_timeout,
// frond_allow_volatile) after the "cosid+".
package cosidstore

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/frond-id/frond"
)

// DefaultStep is the step of a tag frond has no record of (a segment name
// CosId created): CosId keeps its applications' steps in their
// configuration, not in the store.
const DefaultStep = 1000

// MaxNameLen is the width of CosId's name column, varchar(100): the longest
// tag.
const MaxNameLen = 100

// settings are the URL parameters of every kind.
type settings struct {
	step int64
}

// split takes the store's own parameters out of rawURL and returns the
// server's URL (without "cosid+" and those parameters).
func split(rawURL string) (server string, o settings, err error) {
	o = settings{step: DefaultStep}
	rest, ok := strings.CutPrefix(rawURL, "cosid+")
	if !ok {
		return "", o, fmt.Errorf("%w: a CosId store URL starts with cosid+ (cosid+mysql://, cosid+postgres://, cosid+redis://)", frond.ErrInvalidArgument)
	}
	u, err := url.Parse(rest)
	if err != nil {
		return "", o, fmt.Errorf("%w: store URL: %v", frond.ErrInvalidArgument, err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", o, fmt.Errorf("%w: store URL query: %v", frond.ErrInvalidArgument, err)
	}
	if q.Has("frond_step") {
		v := q.Get("frond_step")
		o.step, err = strconv.ParseInt(v, 10, 64)
		if err != nil || o.step < 1 {
			return "", o, fmt.Errorf("%w: store URL parameter frond_step=%q: a whole number of at least 1", frond.ErrInvalidArgument, v)
		}
		q.Del("frond_step")
	}
	u.RawQuery = q.Encode()
	return u.String(), o, nil
}

// checkName refuses a tag whose CosId name does not fit CosId's column.
func checkName(tag string) error {
	if err := frond.ValidateTagName(tag); err != nil {
		return err
	}
	if len(tag) > MaxNameLen {
		return fmt.Errorf("%w: tag %q: %d bytes, and CosId's name column holds %d", frond.ErrInvalidArgument, tag, len(tag), MaxNameLen)
	}
	return nil
}

// missing is CosId's refusal of a name that has no row or key
// (SegmentNameMissingException: "name:[%s] missing."), as frond's
// ErrTagNotFound.
func missing(tag string) error {
	return fmt.Errorf("tag %q: %w: name:[%s] missing.", tag, frond.ErrTagNotFound, tag)
}

// plainOnly refuses what CosId's counter cannot carry: a tag that is not a
// plain segment tag.
func plainOnly(t frond.Tag) error {
	if frond.StoredMode(t.Mode) != "" {
		return fmt.Errorf("%w: tag %q: a CosId store keeps segment tags only (CosId's table has no mode)", frond.ErrInvalidArgument, t.Name)
	}
	if frond.StoredMapping(t.Mapping) != "" {
		return fmt.Errorf("%w: tag %q: a CosId store keeps plain numbers only: %s would hand out other numbers than CosId's from the same counter", frond.ErrInvalidArgument, t.Name, frond.MappingName(t.Mapping))
	}
	return nil
}

// checkUpdate refuses an update to a mapping (plainOnly).
func checkUpdate(name string, u frond.TagUpdate) error {
	if err := u.Validate(); err != nil {
		return err
	}
	if u.Mapping != nil {
		return plainOnly(frond.Tag{Name: name, Mapping: *u.Mapping})
	}
	return nil
}

// The counter and max_id. CosId's last_max_id is the last ID handed out;
// frond's max_id the first not handed out.

// maxIDOf is frond's max_id of CosId's last_max_id.
func maxIDOf(last int64) int64 { return last + 1 }

// lastOf is CosId's last_max_id (its offset, for a new name) of frond's
// max_id: max_id - 1, and 0 for max_id 0 (CosId's offset is at least 0,
// and its first ID is 1).
func lastOf(maxID int64) int64 { return max(maxID-1, 0) }

// highest is the largest last_max_id a raise may reach: max_id (last+1)
// must stay an int64.
const highest = math.MaxInt64 - 1

// segment is the range of a raise of the counter to last by step:
// CosId's (last-step, last], frond's [last-step+1, last+1).
func segment(last, step int64) frond.Range {
	return frond.Range{Start: last - step + 1, End: last + 1, Stride: 1}
}

// Check parses rawURL as Open does, without contacting the server.
func Check(rawURL string) error {
	server, _, err := split(rawURL)
	if err != nil {
		return err
	}
	if isRedis(server) {
		return checkRedis(server)
	}
	return checkSQL(server)
}

// Open opens the store of rawURL: the table cosid (created with CosId's
// DDL when absent) or the Redis keys.
func Open(ctx context.Context, rawURL string) (frond.SegmentStore, error) {
	server, o, err := split(rawURL)
	if err != nil {
		return nil, err
	}
	if isRedis(server) {
		return openRedis(ctx, server, o)
	}
	return openSQL(ctx, server, o)
}

func isRedis(server string) bool {
	return strings.HasPrefix(server, "redis://") || strings.HasPrefix(server, "rediss://")
}
