package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/service"
)

// CosId proxy's HTTP API (cosid-proxy-server 3.2.1: SegmentApi, IdController),
// so that CosId applications configured with the proxy segment
// distributor (cosid.segment.distributor.type: proxy, cosid.proxy.host)
// take their segments from frond: docs/cosid.md. CosId's segment
// {namespace}/{name} is the frond tag "{namespace}.{name}". The routes are
// served at CosId's paths and under /cosid/{token}, for a tag token (or
// the admin token) that CosId's client, which sends no headers of its
// own, carries in its base URL.

// cosidRoutes registers the routes at prefix ("" or "/cosid/{token}").
func (s *Server) cosidRoutes(mux routes, prefix string) {
	mux.HandleFunc("POST "+prefix+"/segments/distributor/{namespace}/{name}", s.cosidCreate)
	mux.HandleFunc("PATCH "+prefix+"/segments/{namespace}/{name}", s.cosidNextMaxID)
	mux.HandleFunc("GET "+prefix+"/ids", s.cosidSnowflake(false))
	mux.HandleFunc("GET "+prefix+"/ids/as-string", s.cosidSnowflake(true))
	mux.HandleFunc("GET "+prefix+"/ids/{name}", s.cosidSegmentID(false))
	mux.HandleFunc("GET "+prefix+"/ids/as-string/{name}", s.cosidSegmentID(true))
	mux.HandleFunc("POST "+prefix+"/machines/{namespace}", s.cosidMachine(s.cosidDistribute))
	mux.HandleFunc("DELETE "+prefix+"/machines/{namespace}", s.cosidMachine(s.cosidRevert))
	mux.HandleFunc("PATCH "+prefix+"/machines/{namespace}", s.cosidMachine(s.cosidGuard))
}

// cosidError is CosId proxy's ErrorResponse: {"code", "msg", "errors"}.
// The code is frond's (docs/api.md#errors); CosId's client reads only the
// machine codes (M-01, M-02, M-03).
type cosidError struct {
	Code   string `json:"code"`
	Msg    string `json:"msg"`
	Errors []any  `json:"errors"`
}

// cosidFail answers err in CosId's shape, with frond's status.
func (s *Server) cosidFail(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	s.count(w, e)
	w.Header().Set("X-Frond-Error", e.Code)
	if e.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retry))
	}
	writeJSON(w, e.status, cosidError{Code: e.Code, Msg: e.Message, Errors: []any{}})
}

// CosId's codes of the machine errors its proxy client reads
// (ErrorResponse: MACHINE_ID_OVERFLOW, MACHINE_ID_LOST), answered with
// 400 as CosId's GlobalRestExceptionHandler does.
const (
	cosidMachineOverflow = "M-01"
	cosidMachineLost     = "M-03"
)

// cosidMachineFail answers a machine route's error: CosId's codes for an
// overflow and a lost machine ID, frond's for the rest.
func (s *Server) cosidMachineFail(w http.ResponseWriter, err error) {
	code := ""
	switch {
	case errors.Is(err, frond.ErrNoWorkerID):
		code = cosidMachineOverflow
	case errors.Is(err, frond.ErrWorkerLost):
		code = cosidMachineLost
	default:
		s.cosidFail(w, err)
		return
	}
	e := toAPIError(err)
	s.count(w, e)
	w.Header().Set("X-Frond-Error", e.Code)
	writeJSON(w, http.StatusBadRequest, cosidError{Code: code, Msg: e.Message, Errors: []any{}})
}

// machineRequest is a machine route's parameters (MachineApi).
type machineRequest struct {
	ns, instance string
	machineBit   int
	stable       bool
	safeGuard    time.Duration
}

// cosidMachine runs a machine route: the admin's (the admin token as
// {token} or Authorization: Bearer; without one, a client on this
// machine), on a node whose registry is CosId's.
func (s *Server) cosidMachine(h func(w http.ResponseWriter, r *http.Request, m machineRequest)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.CosIdMachines == nil {
			s.cosidFail(w, &api.Error{Code: frond.CodeNotFound, Msg: "CosId's machine routes are served by a node whose worker registry is CosId's table (registry: cosid+mysql://... or cosid+postgres://...: docs/cosid.md)"})
			return
		}
		admin, _ := api.Bearer(r.Header.Get("Authorization"))
		if admin == "" {
			admin = r.PathValue("token")
		}
		if err := s.mayReadTags(r, admin); err != nil {
			s.cosidFail(w, err)
			return
		}
		if err := cosidForm(w, r); err != nil {
			s.cosidFail(w, err)
			return
		}
		m := machineRequest{ns: r.PathValue("namespace"), instance: r.Form.Get("instanceId")}
		var err error
		if v := r.Form.Get("stable"); v != "" {
			if m.stable, err = strconv.ParseBool(v); err != nil {
				s.cosidFail(w, badRequest("stable=%s: true or false", service.Quote(v)))
				return
			}
		}
		if r.Form.Has("machineBit") {
			n, err := strconv.Atoi(r.Form.Get("machineBit"))
			if err != nil {
				s.cosidFail(w, badRequest("machineBit=%s: a whole number", service.Quote(r.Form.Get("machineBit"))))
				return
			}
			m.machineBit = n
		}
		if r.Form.Has("safeGuardDuration") {
			if m.safeGuard, err = parseISODuration(r.Form.Get("safeGuardDuration")); err != nil {
				s.cosidFail(w, err)
				return
			}
		}
		h(w, r, m)
	}
}

// cosidDistribute: POST /machines/{namespace}?machineBit=&instanceId=&stable=&safeGuardDuration=
// (MachineApi.distribute): {"machineId", "lastTimeStamp"}.
func (s *Server) cosidDistribute(w http.ResponseWriter, r *http.Request, m machineRequest) {
	if m.machineBit == 0 || m.safeGuard == 0 && !m.stable {
		s.cosidFail(w, badRequest("distribute needs machineBit and safeGuardDuration"))
		return
	}
	id, last, err := s.opts.CosIdMachines.Distribute(r.Context(), m.ns, m.machineBit, m.instance, m.stable, m.safeGuard)
	if err != nil {
		s.cosidMachineFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		MachineID     int64 `json:"machineId"`
		LastTimeStamp int64 `json:"lastTimeStamp"`
	}{id, last})
}

// cosidRevert: DELETE /machines/{namespace}?instanceId=&stable= (MachineApi.revert).
func (s *Server) cosidRevert(w http.ResponseWriter, r *http.Request, m machineRequest) {
	if err := s.opts.CosIdMachines.Revert(r.Context(), m.ns, m.instance, m.stable); err != nil {
		s.cosidMachineFail(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// cosidGuard: PATCH /machines/{namespace}?instanceId=&stable=&safeGuardDuration= (MachineApi.guard).
func (s *Server) cosidGuard(w http.ResponseWriter, r *http.Request, m machineRequest) {
	if err := s.opts.CosIdMachines.Guard(r.Context(), m.ns, m.instance, m.stable, m.safeGuard); err != nil {
		s.cosidMachineFail(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// parseISODuration reads an ISO-8601 duration as Java's Duration.toString
// writes it (PT5M, PT1H30M, PT0.5S, P2DT3H): days, hours, minutes and
// seconds with a fraction, none negative, at most 100 years.
func parseISODuration(v string) (time.Duration, error) {
	bad := badRequest("safeGuardDuration=%s: an ISO-8601 duration such as PT5M", service.Quote(v))
	rest, ok := strings.CutPrefix(strings.ToUpper(v), "P")
	if !ok || rest == "" || len(v) > 64 {
		return 0, bad
	}
	var total float64
	inTime, seen := false, false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return 0, bad
			}
			inTime, rest = true, rest[1:]
			if rest == "" {
				return 0, bad
			}
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, bad
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, bad
		}
		unit := map[bool]map[byte]float64{false: {'D': 24 * 3600}, true: {'H': 3600, 'M': 60, 'S': 1}}[inTime][rest[i]]
		if unit == 0 || rest[i] != 'S' && strings.Contains(rest[:i], ".") {
			return 0, bad
		}
		total += n * unit
		seen, rest = true, rest[i+1:]
	}
	if !seen {
		return 0, bad
	}
	if total >= 100*365*24*3600 {
		// CosId's FOREVER_SAFE_GUARD_DURATION (Duration.ofMillis(Long.MAX_VALUE):
		// "PT2562047788015H12M55.807S", sent by its proxy client with
		// cosid.machine.guarder.enabled=false) and anything as long: no
		// safe guard, as CosId's server reads it (getSafeGuardAt 0: only
		// reverted rows are taken). It refused the application's start
		// before (issue 60).
		return cosidForever, nil
	}
	return time.Duration(total * float64(time.Second)), nil
}

// cosidForever is a safe guard of forever (CosId's FOREVER_SAFE_GUARD_DURATION).
const cosidForever = time.Duration(math.MaxInt64)

// cosidHeads are the first segments of CosId's proxy routes (cosidRoutes).
var cosidHeads = []string{"segments", "machines", "ids"}

// cosidJoined is the path of a request to CosId's routes under
// /cosid/{token} whose client joined its relative path to a base URL
// without a slash (Spring joins "segments/..." to
// cosid.proxy.host "http://frond:8080/cosid/TOKEN" as
// "/cosid/TOKENsegments/..."): the path with the slash put back, and true.
func cosidJoined(p string) (string, bool) {
	after, ok := strings.CutPrefix(p, "/cosid/")
	if !ok {
		return p, false
	}
	first, rest, _ := strings.Cut(after, "/")
	for _, h := range cosidHeads {
		if rest == h || strings.HasPrefix(rest, h+"/") {
			return p, false // /cosid/{token}/{route}: a token that ends as a route's head does
		}
	}
	for _, h := range cosidHeads {
		if token, ok := strings.CutSuffix(first, h); ok && token != "" {
			if rest != "" || h == "ids" {
				fixed := "/cosid/" + token + "/" + h
				if rest != "" {
					fixed += "/" + rest
				}
				return fixed, true
			}
		}
	}
	return p, false
}

// cosidPathToken is the token of a path under /cosid/{token}/, and the
// path after it.
func cosidPathToken(path string) (token, rest string) {
	after, ok := strings.CutPrefix(path, "/cosid/")
	if !ok {
		return "", path
	}
	token, rest, _ = strings.Cut(after, "/")
	return token, "/" + rest
}

// loggedPath is a request's path as the access log writes it: a token in
// it (/cosid/{token}/...) masked.
func loggedPath(path string) string {
	if token, rest := cosidPathToken(path); token != "" {
		return "/cosid/" + secret.Mask + rest
	}
	return path
}

// cosidToken is the caller's tag token: the route's {token}, else the
// token header.
func cosidToken(r *http.Request) string { return tagToken(r, r.PathValue("token")) }

// cosidTag is the frond tag of CosId's segment {namespace}/{name}.
func cosidTag(r *http.Request) (string, error) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if ns == "" || name == "" {
		return "", badRequest("a CosId segment is /segments/{namespace}/{name}")
	}
	tag := ns + "." + name
	return tag, frond.ValidateTagName(tag)
}

// cosidForm parses a CosId request's query and form (a bounded body), and
// refuses a parameter given twice, as every route of frond does
// (docs/security.md: step=5&step=6 was read as 5 before, issue 59).
func cosidForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		return badRequest("malformed query or form: %s", brief(err.Error()))
	}
	for name, vs := range r.Form {
		if len(vs) > 1 {
			return badRequest("%s given %d times: give each parameter once", service.Quote(name), len(vs))
		}
	}
	return nil
}

// cosidParams reads CosId's @RequestParam values from the query (or a
// form body): each name a whole number from lo.
func cosidParams(w http.ResponseWriter, r *http.Request, lo int64, names ...string) ([]int64, error) {
	if err := cosidForm(w, r); err != nil {
		return nil, err
	}
	out := make([]int64, len(names))
	for i, name := range names {
		raw := r.Form.Get(name)
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < lo {
			return nil, badRequest("%s=%s: a whole number from %d", name, service.Quote(raw), lo)
		}
		out[i] = n
	}
	return out, nil
}

// mayCreate says whether the caller may create tag, as CosId's distributor
// initialisation does on the first request for a name: with a tag token
// that names it (when tokens are configured), or as the admin (the admin
// token, in the Authorization header or as the route's {token}; without
// one, a client on this machine).
func (s *Server) mayCreate(r *http.Request, tag string) error {
	token := cosidToken(r)
	if s.svc.TokensSet() && s.svc.Check(&service.Request{Kind: service.KindSegment, Name: tag, Token: token}) == nil {
		return nil
	}
	admin, _ := api.Bearer(r.Header.Get("Authorization"))
	if admin == "" {
		admin = r.PathValue("token")
	}
	return s.mayReadTags(r, admin)
}

// ensure creates tag at CosId's offset (its first ID offset+1) unless it
// exists; an existing tag is left as it is, as CosId's initialisation
// leaves an existing row.
func (s *Server) ensure(r *http.Request, tag string, offset, step int64) error {
	if _, err := s.svc.Tag(r.Context(), tag); !errors.Is(err, frond.ErrTagNotFound) {
		return err
	}
	if err := s.mayCreate(r, tag); err != nil {
		return err
	}
	if offset == math.MaxInt64 {
		return badRequest("offset=%d: the first ID would be past 2^63-1", offset)
	}
	_, err := s.svc.CreateTag(r.Context(), frond.Tag{Name: tag, MaxID: offset + 1, Step: step, Description: "created by CosId's segment distributor"})
	if errors.Is(err, frond.ErrTagExists) {
		err = nil
	}
	return err
}

// cosidCreate: POST /segments/distributor/{namespace}/{name}?offset=&step=
// (SegmentApi.createDistributor): the tag made at the offset if it is
// missing; 200 with no body.
func (s *Server) cosidCreate(w http.ResponseWriter, r *http.Request) {
	tag, err := cosidTag(r)
	if err == nil {
		var p []int64
		if p, err = cosidParams(w, r, 0, "offset", "step"); err == nil {
			if p[1] < 1 {
				err = badRequest("step=%d: must be greater than 0", p[1])
			} else {
				err = s.ensure(r, tag, p[0], p[1])
			}
		}
	}
	if err != nil {
		s.cosidFail(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// cosidNextMaxID: PATCH /segments/{namespace}/{name}?step= (SegmentApi.
// nextMaxId): step IDs taken from the store in one allocation (a Whole
// request), answered as CosId's new max, the JSON number of the last of
// them: the client hands out (max-step, max]. A name never seen is made at
// offset 0 first, as CosId's server does.
func (s *Server) cosidNextMaxID(w http.ResponseWriter, r *http.Request) {
	tag, err := cosidTag(r)
	var p []int64
	if err == nil {
		p, err = cosidParams(w, r, 1, "step")
	}
	if err != nil {
		s.cosidFail(w, err)
		return
	}
	req := service.Request{Kind: service.KindSegment, Name: tag, Count: p[0], Whole: true, Token: cosidToken(r)}
	a, err := s.svc.Take(r.Context(), req)
	if errors.Is(err, frond.ErrTagNotFound) {
		if err = s.ensure(r, tag, 0, p[0]); err == nil {
			a, err = s.svc.Take(r.Context(), req)
		}
	}
	if err != nil {
		s.cosidFail(w, err)
		return
	}
	defer a.Release()
	writeCosidLong(w, a.Ranges[0].End-1)
}

// writeCosidLong answers a Java long as Spring's JSON does: the number.
func writeCosidLong(w http.ResponseWriter, n int64) {
	w.Header().Set("Content-Type", "application/json")
	var b [24]byte
	w.Write(strconv.AppendInt(b[:0], n, 10))
}

// writeCosidString answers a Java String as Spring does: the text.
func writeCosidString(w http.ResponseWriter, v string) {
	w.Header()["Content-Type"] = textPlain
	w.Write([]byte(v))
}

// cosidSnowflake: GET /ids and /ids/as-string (IdController): a snowflake
// ID of this node, as a number or in CosId's default string form
// (Radix62, 11 characters padded with '0': frond's base62).
func (s *Server) cosidSnowflake(text bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.cosidTake(w, r, service.Request{Kind: service.KindSnowflake}, text)
	}
}

// cosidSegmentID: GET /ids/{name} and /ids/as-string/{name}: a segment ID
// of the tag name, as a number or in base62.
func (s *Server) cosidSegmentID(text bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.cosidTake(w, r, service.Request{Kind: service.KindSegment, Name: r.PathValue("name"), Token: cosidToken(r)}, text)
	}
}

func (s *Server) cosidTake(w http.ResponseWriter, r *http.Request, req service.Request, text bool) {
	if r.URL.RawQuery != "" {
		s.cosidFail(w, badRequest("this route takes no parameters"))
		return
	}
	req.Form = service.FormNumber
	if text {
		req.Form = service.FormBase62
	}
	a, ok := s.take(w, r, req, contentJSON, func(err error) { s.cosidFail(w, err) })
	if !ok {
		return
	}
	defer a.Release()
	if text {
		writeCosidString(w, strings.Join(a.Texts(), ""))
		return
	}
	writeCosidLong(w, a.Nums[0])
}
