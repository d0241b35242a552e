package httpapi

import (
	"html/template"
	"net/http"
	"time"
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
{{if eq .Title "cache"}}
<table><tr><th>key</th><th>init</th><th>pos</th><th>next ready</th><th>segment 0 (start, pos, end)</th><th>segment 1 (start, end)</th><th>step</th><th>min step</th><th>loads</th><th>last load</th><th>load time</th><th>remaining</th><th>horizon</th><th>last error</th></tr>
{{range .Cache}}<tr><td>{{.Tag}}</td><td>{{.Ready}}</td><td>{{.Current.Pos}}</td><td>{{.NextReady}}</td><td>{{.Current.Start}}, {{.Current.Pos}}, {{.Current.End}}</td><td>{{if .NextReady}}{{.Next.Start}}, {{.Next.End}}{{else}}-{{end}}</td><td>{{.Step}}</td><td>{{.MinStep}}</td><td>{{.Loads}}</td><td>{{ts .LastLoad}}</td><td>{{dur .LastLoadDuration}}</td><td>{{.Remaining}}</td><td>{{dur .Horizon}}</td><td>{{.LastError}}</td></tr>
{{end}}</table>
{{else}}
<table><tr><th>biz_tag</th><th>max_id</th><th>step</th><th>update_time</th><th>description</th></tr>
{{range .Tags}}<tr><td>{{.Name}}</td><td>{{.MaxID}}</td><td>{{.Step}}</td><td>{{ts .UpdatedAt}}</td><td>{{.Description}}</td></tr>
{{end}}</table>
{{end}}
</body></html>
`))

// cachePage is Leaf's /cache: the buffers of every tag in use.
func (s *Server) cachePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	pageTmpl.Execute(w, map[string]any{"Title": "cache", "Cache": s.svc.SegmentStats()})
}

// dbPage is Leaf's /db: the tags in the store.
func (s *Server) dbPage(w http.ResponseWriter, r *http.Request) {
	tags, err := s.svc.Tags(r.Context())
	data := map[string]any{"Title": "db", "Tags": tags}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		e := toAPIError(err)
		s.count(w, e)
		data["Error"] = e.Message
		w.WriteHeader(e.status)
	}
	pageTmpl.Execute(w, data)
}
