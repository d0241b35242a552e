package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

// cosidMax is the answer of CosId's nextMaxId route: a JSON number.
func (f *fixture) cosidMax(path string, hdr ...string) int64 {
	f.t.Helper()
	r := f.do("PATCH", path, "", hdr...)
	f.want(r, 200)
	n, err := strconv.ParseInt(r.body, 10, 64)
	if err != nil || !strings.HasPrefix(r.hdr.Get("Content-Type"), "application/json") {
		f.t.Fatalf("PATCH %s: %q (%s), want a JSON number", path, r.body, r.hdr.Get("Content-Type"))
	}
	return n
}

// CosId's proxy segment distributor: a CosId application creates its
// distributor (the tag at its offset), then takes segments (max-step, max]
// by the new max; frond's own requests for the tag take other IDs.
func TestCosId_Segments(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("POST", "/segments/distributor/cosid/bill?offset=100&step=10", ""), 200)
	f.want(f.do("POST", "/segments/distributor/cosid/bill?offset=5000&step=10", ""), 200) // idempotent: the tag stays
	if got, err := f.svc.Tag(context.Background(), "cosid.bill"); err != nil || got.MaxID != 101 || got.Step != 10 {
		t.Fatalf("the tag of CosId's cosid.bill at offset 100: %+v, %v", got, err)
	}
	seen := map[int64]string{}
	take := func(who string, id int64) {
		if prev, ok := seen[id]; ok {
			t.Fatalf("ID %d handed out to %s and %s", id, prev, who)
		}
		seen[id] = who
	}
	cosid := func(step int64) {
		maxID := f.cosidMax("/segments/cosid/bill?step=" + strconv.FormatInt(step, 10))
		for id := maxID - step + 1; id <= maxID; id++ { // DefaultIdSegment: (max-step, max]
			take("CosId", id)
		}
	}
	cosid(10)
	if _, ok := seen[101]; !ok {
		t.Fatalf("CosId's first segment at offset 100 is not (100, 110]: %v", seen)
	}
	for round := range 30 {
		r := f.do("GET", "/api/segment/get/cosid.bill", "")
		f.want(r, 200)
		id, _ := strconv.ParseInt(r.body, 10, 64)
		take("frond", id)
		cosid(int64(1 + round%7))
	}
	// A name never created: made at offset 0, as CosId's server does.
	if got := f.cosidMax("/segments/cosid/fresh?step=10"); got != 10 {
		t.Fatalf("first max of a new name: %d, want 10", got)
	}
	for _, bad := range []string{"/segments/cosid/bill?step=0", "/segments/cosid/bill", "/segments/cosid/bill?step=x", "/segments/cosid/a%20b?step=1"} {
		r := f.do("PATCH", bad, "")
		f.want(r, 400, `"code":"invalid_argument"`, `"errors":[]`)
	}
	f.want(f.do("POST", "/segments/distributor/cosid/bill?offset=-1&step=10", ""), 400)
}

// A name frond would hand out in another shape is refused before a
// segment goes to CosId: a sequence tag's IDs come from the store one
// request at a time, and a mapped tag's numbers are not its counter's.
func TestCosId_RefusedTags(t *testing.T) {
	f := newFixture(t, api.Options{})
	for _, tag := range []frond.Tag{{Name: "cosid.seq", Step: 10, MaxID: 1, Mode: frond.ModeSequence}, {Name: "cosid.mist", Step: 10, MaxID: 1, Mapping: frond.MappingMist}} {
		if _, err := f.svc.CreateTag(context.Background(), tag); err != nil {
			t.Fatal(err)
		}
		r := f.do("PATCH", "/segments/"+strings.Replace(tag.Name, ".", "/", 1)+"?step=10", "")
		if r.code < 400 || r.code >= 500 {
			t.Fatalf("PATCH of %+v: %d %s", tag, r.code, r.body)
		}
	}
}

// Creating a name is the admin's, or a token's that names the tag: a
// client on another machine without either takes segments of existing
// names only.
func TestCosId_Access(t *testing.T) {
	f := newFixture(t, api.Options{})
	remote := []string{":remote", "192.0.2.7:5000", ":host", "frond.example:8080"}
	f.want(f.do("PATCH", "/segments/cosid/new?step=10", "", remote...), 403)
	f.want(f.do("POST", "/segments/distributor/cosid/new?offset=0&step=10", "", remote...), 403)
	if _, err := f.svc.CreateTag(context.Background(), frond.Tag{Name: "cosid.new", Step: 10, MaxID: 1}); err != nil {
		t.Fatal(err)
	}
	f.cosidMax("/segments/cosid/new?step=10", remote...)
	f.want(f.do("POST", "/segments/distributor/cosid/new?offset=0&step=10", "", remote...), 200) // exists: nothing to create

	g := newFixture(t, api.Options{AdminToken: "adm1n"}, func(c *service.Config) {
		c.Tokens = map[string][]string{"t0k": {"cosid.bill", "cosid.made"}}
	})
	if _, err := g.svc.CreateTag(context.Background(), frond.Tag{Name: "cosid.bill", Step: 10, MaxID: 1}); err != nil {
		t.Fatal(err)
	}
	g.want(g.do("PATCH", "/segments/cosid/bill?step=10", ""), 403)
	g.want(g.do("PATCH", "/cosid/wrong/segments/cosid/bill?step=10", ""), 403)
	if got := g.cosidMax("/cosid/t0k/segments/cosid/bill?step=10"); got != 10 {
		t.Fatalf("max %d", got)
	}
	g.cosidMax("/segments/cosid/bill?step=10", "X-Frond-Token", "t0k")
	g.want(g.do("PATCH", "/cosid/t0k/segments/cosid/other?step=10", ""), 403)                    // a tag the token does not name
	g.want(g.do("POST", "/cosid/t0k/segments/distributor/cosid/made?offset=7&step=10", ""), 200) // one it names
	if got, err := g.svc.Tag(context.Background(), "cosid.made"); err != nil || got.MaxID != 8 {
		t.Fatalf("made with the tag token: %+v, %v", got, err)
	}
	g.want(g.do("POST", "/cosid/adm1n/segments/distributor/cosid/admins?offset=0&step=10", ""), 200)
	g.want(g.do("POST", "/segments/distributor/cosid/admins2?offset=0&step=10", "", "Authorization", "Bearer adm1n"), 200)
	g.want(g.do("POST", "/segments/distributor/cosid/admins3?offset=0&step=10", "", "Authorization", "Bearer nope"), 401)
}

// CosId's IdController: a snowflake ID and a segment ID, as numbers and in
// CosId's default string form (Radix62, 11 characters).
func TestCosId_IDs(t *testing.T) {
	f := newFixture(t, api.Options{})
	for _, path := range []string{"/ids", "/ids/order"} {
		r := f.do("GET", path, "")
		f.want(r, 200)
		var n int64
		if err := json.Unmarshal([]byte(r.body), &n); err != nil || n <= 0 {
			t.Fatalf("%s: %q", path, r.body)
		}
	}
	for _, path := range []string{"/ids/as-string", "/ids/as-string/order"} {
		r := f.do("GET", path, "")
		f.want(r, 200)
		if len(r.body) != 11 || strings.Trim(r.body, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("%s: %q, want 11 base62 characters", path, r.body)
		}
	}
	f.want(f.do("GET", "/ids/missing", ""), 404, `"msg"`)
	f.want(f.do("GET", "/ids?n=5", ""), 400)
}

// fakeMachines records the proxy's machine calls.
type fakeMachines struct {
	calls []string
	err   error
}

func (f *fakeMachines) Distribute(_ context.Context, ns string, bits int, instance string, stable bool, guard time.Duration) (int64, int64, error) {
	f.calls = append(f.calls, fmt.Sprintf("distribute %s %d %s %v %v", ns, bits, instance, stable, guard))
	return 5, 1700000000123, f.err
}

func (f *fakeMachines) Guard(_ context.Context, ns, instance string, stable bool, guard time.Duration) error {
	f.calls = append(f.calls, fmt.Sprintf("guard %s %s %v %v", ns, instance, stable, guard))
	return f.err
}

func (f *fakeMachines) Revert(_ context.Context, ns, instance string, stable bool) error {
	f.calls = append(f.calls, fmt.Sprintf("revert %s %s %v", ns, instance, stable))
	return f.err
}

// CosId proxy's machine routes: MachineApi's requests, its MachineState
// answer and its error codes, the admin's only.
func TestCosId_Machines(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("POST", "/machines/cosid?machineBit=10&instanceId=10.0.0.1:8080&stable=false&safeGuardDuration=PT5M", ""), 404, "registry")

	m := &fakeMachines{}
	f = newFixture(t, api.Options{CosIdMachines: m})
	f.want(f.do("POST", "/machines/cosid?machineBit=10&instanceId=10.0.0.1:8080&stable=false&safeGuardDuration=PT5M", ""), 200, `{"machineId":5,"lastTimeStamp":1700000000123}`)
	f.want(f.do("PATCH", "/machines/cosid?instanceId=10.0.0.1:8080&stable=true&safeGuardDuration=PT1H30M", ""), 200)
	f.want(f.do("DELETE", "/machines/cosid?instanceId=10.0.0.1:8080&stable=true", ""), 200)
	want := []string{"distribute cosid 10 10.0.0.1:8080 false 5m0s", "guard cosid 10.0.0.1:8080 true 1h30m0s", "revert cosid 10.0.0.1:8080 true"}
	if !slices.Equal(m.calls, want) {
		t.Fatalf("calls %q, want %q", m.calls, want)
	}
	m.err = fmt.Errorf("%w: all taken", frond.ErrNoWorkerID)
	f.want(f.do("POST", "/machines/cosid?machineBit=3&instanceId=i&stable=false&safeGuardDuration=PT5M", ""), 400, `"code":"M-01"`)
	m.err = fmt.Errorf("%w: gone", frond.ErrWorkerLost)
	f.want(f.do("PATCH", "/machines/cosid?instanceId=i&stable=false&safeGuardDuration=PT5M", ""), 400, `"code":"M-03"`)
	for _, bad := range []string{"machineBit=x&instanceId=i&safeGuardDuration=PT5M", "machineBit=3&instanceId=i&safeGuardDuration=5m", "machineBit=3&instanceId=i&stable=maybe&safeGuardDuration=PT5M", "instanceId=i"} {
		f.want(f.do("POST", "/machines/cosid?"+bad, ""), 400, `"code":"invalid_argument"`)
	}
	remote := []string{":remote", "192.0.2.7:5000", ":host", "frond.example:8080"}
	f.want(f.do("DELETE", "/machines/cosid?instanceId=i&stable=false", "", remote...), 403)

	g := newFixture(t, api.Options{CosIdMachines: m, AdminToken: "adm1n"})
	m.err = nil
	g.want(g.do("DELETE", "/machines/cosid?instanceId=i&stable=false", "", remote...), 401)
	g.want(g.do("DELETE", "/cosid/adm1n/machines/cosid?instanceId=i&stable=false", "", remote...), 200)
	g.want(g.do("DELETE", "/machines/cosid?instanceId=i&stable=false", "", append(remote, "Authorization", "Bearer adm1n")...), 200)
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT5M": 5 * time.Minute, "PT1H30M": 90 * time.Minute, "PT0.5S": 500 * time.Millisecond, "P2DT3H": 51 * time.Hour, "PT0S": 0, "pt10s": 10 * time.Second} {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	// CosId's FOREVER_SAFE_GUARD_DURATION, sent with
	// cosid.machine.guarder.enabled=false, and anything of 100 years or
	// more: no safe guard (issue 60; refused before).
	for _, forever := range []string{"PT2562047788015H12M55.807S", "P1000000D", "P36500D"} {
		if got, err := parseISODuration(forever); err != nil || got != cosidForever {
			t.Errorf("%s: %v, %v; want forever", forever, got, err)
		}
	}
	for _, bad := range []string{"", "P", "PT", "5m", "PT5", "PT-5M", "PT1.5M", "P1H", "PTT5M", "PT5X"} {
		if _, err := parseISODuration(bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%q: %v, want invalid_argument", bad, err)
		}
	}
}

func FuzzParseISODuration(f *testing.F) {
	for _, s := range []string{"PT5M", "P2DT3H", "PT0.5S", "PT", "P1000000D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseISODuration(s)
		if err != nil {
			if !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if d < 0 || d > 100*365*24*time.Hour && d != cosidForever {
			t.Fatalf("%q: %v", s, d)
		}
	})
}

// A token in CosId's base URL (/cosid/{token}/...) is a token like any
// other: wrong ones count against the address, as on every route, and the
// access log never writes it.
func TestCosId_PathToken(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tokens := func(c *service.Config) { c.Tokens = map[string][]string{"tag-secret": {"cosid.bill"}} }
	known := func(tok string) bool { return tok == "s3cret" || tok == "tag-secret" }
	for _, wrong := range []string{"/cosid/wrong/segments/cosid/bill?step=10", "/cosid/wrong/ids/cosid.bill", "/cosid/wrong/machines/cosid?instanceId=i&stable=false"} {
		g := api.NewGuard(api.GuardOptions{AuthFailures: 3, AuthWindow: time.Minute, Now: func() time.Time { return now }, Known: known})
		f := newFixture(t, api.Options{AdminToken: "s3cret", Guard: g, CosIdMachines: &fakeMachines{}}, tokens)
		if _, err := f.svc.CreateTag(context.Background(), frond.Tag{Name: "cosid.bill", Step: 10, MaxID: 1}); err != nil {
			t.Fatal(err)
		}
		method := map[bool]string{true: "PATCH", false: "GET"}[strings.Contains(wrong, "segments")]
		if strings.Contains(wrong, "machines") {
			method = "DELETE"
		}
		for range 3 {
			if r := f.do(method, wrong, ""); r.code != 403 && r.code != 401 {
				t.Fatalf("%s: %d %s", wrong, r.code, r.body)
			}
		}
		if r := f.do("PATCH", "/cosid/tag-secret/segments/cosid/bill?step=10", ""); r.code != 429 {
			t.Fatalf("%s: after 3 wrong tokens the right one got %d %s; want rate_limited", wrong, r.code, r.body)
		}
	}
	var logs strings.Builder
	f := newFixture(t, api.Options{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, tokens)
	f.do("PATCH", "/cosid/tag-secret/segments/cosid/bill?step=10", "")
	if strings.Contains(logs.String(), "tag-secret") || !strings.Contains(logs.String(), `/cosid/***/segments/cosid/bill`) {
		t.Fatalf("access log: %s", logs.String())
	}
}

// Issue 60: Spring joins CosId's relative proxy paths to cosid.proxy.host
// without a slash ("http://frond:8080/cosid/TOKEN" + "segments/..."): the
// joined form is served as the documented one, and a token that ends as a
// route's head still works in the documented form.
func TestCosIdJoinedPaths(t *testing.T) {
	for in, want := range map[string]string{
		"/cosid/tok1segments/distributor/ns/name": "/cosid/tok1/segments/distributor/ns/name",
		"/cosid/tok1segments/ns/name":             "/cosid/tok1/segments/ns/name",
		"/cosid/tok1machines/ns":                  "/cosid/tok1/machines/ns",
		"/cosid/tok1ids":                          "/cosid/tok1/ids",
		"/cosid/tok1ids/as-string":                "/cosid/tok1/ids/as-string",
	} {
		if got, ok := cosidJoined(in); !ok || got != want {
			t.Errorf("%s: %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, p := range []string{"/cosid/tok1/segments/ns/name", "/cosid/xids/ids", "/cosid/xsegments/segments/ns/n", "/segments/ns/name", "/cosid/segments", "/cosid/ids"} {
		if got, ok := cosidJoined(p); ok {
			t.Errorf("%s rewritten to %s", p, got)
		}
	}
	f := newFixture(t, api.Options{AdminToken: "adm1n"})
	f.want(f.do("POST", "/cosid/adm1nsegments/distributor/cosid/joined?offset=0&step=10", ""), 200)
	f.want(f.do("PATCH", "/cosid/adm1nsegments/cosid/joined?step=10", ""), 200)
}

// Issue 59: a CosId parameter given twice is refused, as on every route.
func TestCosId_RepeatedParameter(t *testing.T) {
	f := newFixture(t, api.Options{AdminToken: "adm1n"})
	f.want(f.do("POST", "/cosid/adm1n/segments/distributor/cosid/rep?offset=0&step=10", ""), 200)
	f.want(f.do("PATCH", "/cosid/adm1n/segments/cosid/rep?step=5&step=6", ""), 400, "given 2 times")
	f.want(f.do("PATCH", "/cosid/adm1n/segments/cosid/rep?step=5", ""), 200)
}
