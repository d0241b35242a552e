package httpapi

import (
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond/segment"
)

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000")
	},
	"dur": func(d time.Duration) string {
		if d < 0 {
			return "-"
		}
		return d.Round(time.Millisecond).String()
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>frond {{.Title}}</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px;text-align:right}th{background:#eee}</style>
</head><body><h1>frond {{.Title}}</h1>
{{if .Error}}<p><b>error:</b> {{.Error}}</p>{{end}}
{{with .Page}}<p>{{if .Match}}tags containing <code>{{.Match}}</code>: {{.Matched}} of {{.Total}}{{else}}{{.Total}} tags{{end}}{{if .Matched}}, {{.From}} to {{.To}} shown{{end}}.
{{if .Prev}}<a href="{{.Prev}}">previous {{.Limit}}</a>{{end}} {{if .Next}}<a href="{{.Next}}">next {{.Limit}}</a>{{end}}
<small>(?q=text&amp;offset=N&amp;limit=N, at most {{.Max}} a page)</small></p>{{end}}
{{if eq .Title "cache"}}
<table><tr><th>key</th><th>init</th><th>pos</th><th>next ready</th><th>segment 0 (start, pos, end)</th><th>segment 1 (start, end)</th><th>step</th><th>min step</th><th>loads</th><th>last load</th><th>load time</th><th>remaining</th><th>horizon</th><th>last error</th></tr>
{{range .Cache}}<tr><td>{{.Tag}}</td><td>{{.Ready}}</td><td>{{.Current.Pos}}</td><td>{{.NextReady}}</td><td>{{.Current.Start}}, {{.Current.Pos}}, {{.Current.End}}</td><td>{{if .NextReady}}{{.Next.Start}}, {{.Next.End}}{{else}}-{{end}}</td><td>{{.Step}}</td><td>{{.MinStep}}</td><td>{{.Loads}}</td><td>{{ts .LastLoad}}</td><td>{{dur .LastLoadDuration}}</td><td>{{.Remaining}}</td><td>{{dur .Horizon}}</td><td>{{.LastError}}</td></tr>
{{end}}</table>
{{else}}
<p>{{len .Tags}} tags{{with .After}} after <code>{{.}}</code>{{end}}, by name.{{with .Next}} <a href="{{.}}">next page</a>{{end}}
<small>(?after=name&amp;limit=N, at most 10000 a page)</small></p>
<table><tr><th>biz_tag</th><th>max_id</th><th>step</th><th>update_time</th><th>description</th></tr>
{{range .Tags}}<tr><td>{{.Name}}</td><td>{{.MaxID}}</td><td>{{.Step}}</td><td>{{ts .UpdatedAt}}</td><td>{{.Description}}</td></tr>
{{end}}</table>
{{end}}
</body></html>
`))

// pageMax bounds a page of /cache and /db; pageDefault is one's size
// when the request does not say (Leaf's pages list every tag: frond's list
// them a page at a time, so a node with many tags answers in bounded time
// and memory).
const (
	pageDefault = 1000
	pageMax     = 10000
)

// page is the window of a paged list: ?q= (tags whose name contains it),
// ?offset=, ?limit=.
type page struct {
	Match          string
	Offset, Limit  int64
	Total, Matched int
	From, To       int64 // 1-based, inclusive, of the matched
	Prev, Next     string
	Max            int
	path           string
}

func parsePage(r *http.Request) (*page, error) {
	q, err := parseQuery(r, "q", "offset", "limit")
	if err != nil {
		return nil, err
	}
	p := &page{Max: pageMax, path: r.URL.Path}
	p.Match, _ = q.get("q")
	if p.Offset, err = q.int("offset", 0, 0, math.MaxInt32); err != nil {
		return nil, err
	}
	if p.Limit, err = q.int("limit", pageDefault, 1, pageMax); err != nil {
		return nil, err
	}
	return p, nil
}

// take reports whether the next item of the list, named name, is shown,
// counting it.
func (p *page) take(name string) bool {
	p.Total++
	if !strings.Contains(name, p.Match) {
		return false
	}
	p.Matched++
	return int64(p.Matched) > p.Offset && int64(p.Matched) <= p.Offset+p.Limit
}

// done sets the page's range and links once every item was counted.
func (p *page) done() {
	if int64(p.Matched) > p.Offset {
		p.From, p.To = p.Offset+1, min(int64(p.Matched), p.Offset+p.Limit)
	}
	link := func(off int64) string {
		v := url.Values{}
		if p.Match != "" {
			v.Set("q", p.Match)
		}
		if off > 0 {
			v.Set("offset", strconv.FormatInt(off, 10))
		}
		if p.Limit != pageDefault {
			v.Set("limit", strconv.FormatInt(p.Limit, 10))
		}
		if len(v) == 0 {
			return p.path
		}
		return p.path + "?" + v.Encode()
	}
	if p.Offset > 0 {
		p.Prev = link(max(0, p.Offset-p.Limit))
	}
	if int64(p.Matched) > p.Offset+p.Limit {
		p.Next = link(p.Offset + p.Limit)
	}
}

// cachePage is Leaf's /cache: the buffers of the tags in use, by tag, a
// page at a time.
func (s *Server) cachePage(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var shown []segment.Stats
	for _, b := range s.svc.SegmentStats() {
		if p.take(b.Tag) {
			shown = append(shown, b)
		}
	}
	p.done()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	pageTmpl.Execute(w, map[string]any{"Title": "cache", "Cache": shown, "Page": p})
}

// dbPage is Leaf's /db: the tags in the store, by name, a page at a time
// (?after=name, ?limit=, 1000 by default): one store read of a page, so a
// store of a million tags is shown as quickly as one of ten.
func (s *Server) dbPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "after", "limit")
	var limit int64
	if err == nil {
		limit, err = q.int("limit", pageDefault, 1, pageMax)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, _ := q.get("after")
	tags, next, err := s.svc.TagPage(r.Context(), after, int(limit))
	data := map[string]any{"Title": "db", "Tags": tags, "After": after}
	if next != "" {
		v := url.Values{"after": {next}}
		if limit != pageDefault {
			v.Set("limit", strconv.FormatInt(limit, 10))
		}
		data["Next"] = "/db?" + v.Encode()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		e := toAPIError(err)
		s.count(w, e)
		data["Error"] = e.Message
		w.WriteHeader(e.status)
	}
	pageTmpl.Execute(w, data)
}
