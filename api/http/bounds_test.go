package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/frond-id/frond/api"
)

func TestV1Bounds(t *testing.T) {
	f := newFixture(t, api.Options{})
	r := f.do("GET", "/v1/bounds?from=2026-11-01&to=2026-12-01", "")
	f.want(r, 200, `"kind":"snowflake"`, `"layout":"twitter"`, `"first_str":"`)
	var b struct {
		First, Last int64
		FirstStr    string `json:"first_str"`
		LastStr     string `json:"last_str"`
		From, To    string
	}
	if err := json.Unmarshal([]byte(r.body), &b); err != nil || b.First <= 0 || b.Last <= b.First || b.From != "2026-11-01T00:00:00Z" ||
		b.FirstStr != fmt.Sprint(b.First) || b.LastStr != fmt.Sprint(b.Last) {
		t.Fatalf("%s: %+v, %v", r.body, b, err)
	}
	d := f.do("GET", "/v1/decode/"+strings.Trim(jsonField(t, r.body, "last_str"), `"`), "")
	f.want(d, 200, `"time":"2026-11-30T23:59:59.999Z"`, `"node":1023`, `"sequence":4095`)
	f.want(f.do("GET", "/v1/bounds?kind=uuid&version=7&form=typeid&prefix=user&from=1764547200000&to=2026-12-02T00:00:00%2B01:00", ""), 200,
		`"first":"user_01`, `"version":7`, `"form":"typeid"`)
	f.want(f.do("GET", "/v1/bounds?kind=uuid&version=6&from=2026-11-01&to=2026-11-02", ""), 200, `"first":"1f1d5872-e57c-6000-8000-000000000000"`, `"last":"1f1d6505-8c17-6fff-bfff-ffffffffffff"`) // 2026-11-01 in 100 ns since 1582-10-15: 0x1f1d5872e57c000
	for _, bad := range []string{
		"/v1/bounds?from=2026-11-01",                            // no to
		"/v1/bounds?from=2026-12-01&to=2026-11-01",              // reversed
		"/v1/bounds?from=yesterday&to=2026-11-01",               // not a time
		"/v1/bounds?kind=segment&from=2026-11-01&to=2026-11-02", // no time in it
		"/v1/bounds?kind=uuid&version=4&from=2026-11-01&to=2026-11-02",
		"/v1/bounds?from=1990-01-01&to=2000-01-01",       // before the layout's epoch
		"/v1/bounds?from=2026-11-01&to=2026-11-02&frm=x", // a typo
		"/v1/bounds?from=2026-11-01&to=2026-11-02&layout=nope",
	} {
		f.want(f.do("GET", bad, ""), 400, `"invalid_argument"`)
	}
}

func TestV1Compose(t *testing.T) {
	f := newFixture(t, api.Options{})
	r := f.do("GET", "/v1/compose?time=2026-11-29T12:00:00.123Z&node=5&sequence=7", "")
	f.want(r, 200, `"time":"2026-11-29T12:00:00.123Z"`, `"node":5`, `"sequence":7`, `"id_str":"`)
	id := strings.Trim(jsonField(t, r.body, "id_str"), `"`)
	f.want(f.do("GET", "/v1/decode/"+id, ""), 200, `"time":"2026-11-29T12:00:00.123Z"`, `"node":5`, `"sequence":7`)
	for _, bad := range []string{
		"/v1/compose",
		"/v1/compose?time=2026-11-29&node=1024",
		"/v1/compose?time=2026-11-29&sequence=4096",
		"/v1/compose?time=2026-11-29&node=-1",
		"/v1/compose?time=2000-01-01",
		"/v1/compose?time=2026-11-29&datacenter=1&worker=2", // twitter has no datacenter bits
	} {
		f.want(f.do("GET", bad, ""), 400, `"invalid_argument"`)
	}
}

// jsonField is the raw JSON of a top-level field of body.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return string(m[name])
}
