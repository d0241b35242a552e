package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/internal/testenv"
)

// chromium finds Debian's chromium (installed by .ci/services.sh).
func chromium(t *testing.T) string {
	return testenv.Tool(t, "apt-get install chromium", "chromium", "chromium-browser")
}

// The dashboard in a real browser (headless Chromium): it loads with no
// console error, shows a tag created through the API, its numbers move
// after IDs are taken, and the create-tag form is refused without the
// admin token and works with it. A screenshot goes to $FROND_TEST_OUTPUT
// (or the test's temporary directory).
func TestDashboard_Browser(t *testing.T) {
	chrome := chromium(t)
	f := newFixture(t, api.Options{AdminToken: "s3cret"})
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	defer f.h.(*Server).StopStreams()
	f.want(f.do("GET", "/api/segment/get/order", ""), 200)
	// Requests until the page's first snapshot is read: it shows their
	// rate, measured by the server over its last seconds, however long
	// Chromium takes to start on a busy machine (50 requests sent before
	// it started fell out of the window at load 8-37: issue 60).
	traffic := make(chan struct{})
	trafficDone := make(chan struct{})
	go func() {
		defer close(trafficDone)
		for i := 0; ; i++ {
			select {
			case <-traffic:
				return
			case <-time.After(20 * time.Millisecond):
			}
			path := "/v1/segment/order"
			if i%10 == 0 {
				path = "/v1/segment/no-such-tag"
			}
			req := httptest.NewRequest("GET", path, nil)
			f.h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}()
	stopTraffic := sync.OnceFunc(func() { close(traffic); <-trafficDone })
	defer stopTraffic()
	for range 50 {
		f.want(f.do("GET", "/v1/segment/order", ""), 200)
	}
	f.want(f.do("GET", "/v1/segment/no-such-tag", ""), 404)

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 1000))...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute) // a bound: Chromium starts slowly on a busy machine
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, "console.error: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("exception: %s at %s:%d", ev.ExceptionDetails.Text, ev.ExceptionDetails.URL, ev.ExceptionDetails.LineNumber))
		}
	}); err != nil {
		t.Fatal(err)
	}

	row := `tr[data-tag="order"]`
	// Tag details are the admin's: hidden until the token is typed.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"), // / leads to the dashboard
		chromedp.WaitVisible(chromedp.CSS(`tr.hidden-tags`)),
	); err != nil {
		t.Fatalf("the dashboard did not load: %v", err)
	}
	firstProtocols, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#protocols tbody").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	stopTraffic()
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token`), "s3cret\t"), // typed, then focus moves on: change
		chromedp.WaitVisible(chromedp.CSS(row)),
	); err != nil {
		t.Fatalf("the dashboard did not show tag order once the token was typed: %v", err)
	}
	// The first snapshot shows the server's rates, measured over its last
	// seconds (the page measured them between two snapshots: 0 at first),
	// and the error codes that occurred only (it listed every code ever
	// seen, at 0.0/s).
	if !regexp.MustCompile(`(?m)^http\t[1-9]`).MatchString(firstProtocols) || !strings.Contains(firstProtocols, "tag_not_found ") {
		t.Fatalf("the first snapshot's protocols: %q", firstProtocols)
	}
	// A form's error shows under that form.
	if next, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("create-tag").nextElementSibling.id`)); err != nil || next != "create-tag-result" {
		t.Fatalf("the create form's answer goes to %q (%v)", next, err)
	}
	// The text of sel, read in the page in one step: the table is drawn
	// again every second, and a node found by one DevTools call can be gone
	// by the next ("No node with given id found", a flake of chromedp.Text).
	text := func(sel string) string {
		t.Helper()
		js := fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	before := text(row + " td.remaining")
	// Take IDs through the API: the remaining IDs on the page go down.
	f.want(f.do("GET", "/v1/segment/order?n=500", ""), 200)
	deadline := time.Now().Add(30 * time.Second)
	for text(row+" td.remaining") == before {
		if time.Now().After(deadline) {
			t.Fatalf("the remaining IDs stayed at %s after 500 IDs were taken", before)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Create a tag from the form: refused without the token, done with it.
	// The stream keeps its token; the form has none.
	// The last hour: the node's plots have the sampler's first point; the
	// tag picker lists order, and its plots draw the tag's history.
	deadline = time.Now().Add(30 * time.Second)
	svgText := func(sel string) string { // an SVG element has no innerText
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	for !strings.Contains(svgText(`#plot-node-rate`), " minute") ||
		text(`#history-tag`) != "order" || !strings.Contains(text(`#plot-tag-rate-caption`), "IDs/s of order") {
		if time.Now().After(deadline) {
			t.Fatalf("the plots show %q, %q, tag %q", svgText(`#plot-node-rate`), text(`#plot-tag-rate-caption`), text(`#history-tag`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#plot-node-rate polyline, #plot-node-rate circle").length`)); err != nil || n == 0 {
		t.Fatalf("the node's rate plot draws nothing: %d, %v", n, err)
	}
	// Issue 44, item 10: one point is a level, not a lone dot; a plot
	// without points says whose first point comes when; the step column
	// holds the step, not its whole history.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#plot-node-rate line.level").length`)); err != nil || n != 1 {
		t.Fatalf("the node's one point is not drawn as a level: %d, %v", n, err)
	}
	for _, sel := range []string{`#plot-node-horizon`, `#plot-tag-rate`} {
		if got := svgText(sel); strings.Contains(got, "a minute after start") {
			t.Fatalf("%s says %q", sel, got)
		}
	}
	if got := text(`tr[data-tag="order"] td.step`); strings.Contains(got, "→") || !strings.HasPrefix(got, "1,000") && !strings.HasPrefix(got, "1000") {
		t.Fatalf("the step column: %q", got)
	}

	// The search finds a tag by name through /ui/tags, and says when
	// nothing matches; cleared, the stream's tags come back.
	searchFor := func(q string) {
		t.Helper()
		js := fmt.Sprintf(`(() => { const e = document.getElementById("tag-search"); e.value = %q; e.dispatchEvent(new Event("input")); return "" })()`, q)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](js)); err != nil {
			t.Fatal(err)
		}
	}
	searchFor("zz")
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(text(`#tags`), `no tag in use has "zz" in its name`) || !strings.Contains(text(`#tag-count`), "no match among 1 tag in use") {
		if time.Now().After(deadline) {
			t.Fatalf("a search for zz shows %q, %q", text(`#tags`), text(`#tag-count`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	searchFor("rde")
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(text(`#tag-count`), `1 to 1 of 1 tag with "rde"`) || text(row) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("a search for rde shows %q, %q", text(`#tags`), text(`#tag-count`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	searchFor("")
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(text(`#tag-count`), "1 of 1 tag in use shown") {
		if time.Now().After(deadline) {
			t.Fatalf("the search cleared shows %q", text(`#tag-count`))
		}
		time.Sleep(100 * time.Millisecond)
	}

	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("token").value = ""`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#create-tag input[name=name]`), "web"),
		chromedp.SetValue(chromedp.CSS(`#create-tag input[name=step]`), "10"),
		chromedp.Click(chromedp.CSS(`#create-tag button`)),
		chromedp.WaitVisible(chromedp.CSS(`#create-tag-result.err`)),
	); err != nil {
		t.Fatal(err)
	}
	if result := text(`#create-tag-result`); !strings.Contains(result, "unauthorized") {
		t.Fatalf("without the token the form answered %q", result)
	}
	if _, err := f.svc.Tag(context.Background(), "web"); err == nil {
		t.Fatal("a refused create made the tag")
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#token`), "s3cret"),
		chromedp.Click(chromedp.CSS(`#create-tag button`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#create-tag-result.err`)),
	); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(text(`#create-tag-result`), `"name": "web"`) {
		if time.Now().After(deadline) {
			t.Fatalf("with the token the form answered %q", text(`#create-tag-result`))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := f.svc.Tag(context.Background(), "web"); err != nil {
		t.Fatalf("the form's tag: %v", err)
	}

	// A sequence tag from the form; once used, its row says what it is.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#create-tag input[name=name]`), "ticket"),
		chromedp.SetValue(chromedp.CSS(`#create-tag select[name=mode]`), "sequence"),
		chromedp.Click(chromedp.CSS(`#create-tag button`)),
	); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(text(`#create-tag-result`), `"mode": "sequence"`) {
		if time.Now().After(deadline) {
			t.Fatalf("creating a sequence tag answered %q", text(`#create-tag-result`))
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.want(f.do("GET", "/v1/segment/ticket?n=3", ""), 200, `"ids":[1,2,3]`)
	seqRow := `tr[data-tag="ticket"]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(seqRow))); err != nil {
		t.Fatalf("the dashboard did not show the sequence tag: %v", err)
	}
	if got := text(seqRow); !strings.Contains(got, "sequence") || !strings.Contains(got, "1 store call for 3 IDs, up to 1 request a call") {
		t.Fatalf("the sequence tag's row: %q", got)
	}

	// The Take form offers every kind and form: a UUID v5 of a name (the
	// known answer), a TypeID with its prefix, Mist (of a Mist tag: the
	// tag's mapping) and friendly forms.
	f.want(f.do("POST", "/v1/tags", `{"name":"invite","step":100,"mapping":"mist"}`, "Authorization", "Bearer s3cret"), 201)
	for _, c := range []struct {
		kind, name, form, prefix, namespace, want string
	}{
		{"uuid-5", "example.com", "", "", "dns", `"uuid": "cfbff0d1-9375-5685-968c-48ce8b15ae17"`},
		{"typeid", "", "", "user", "", `"user_0`},
		{"uuid-6", "", "", "", "", `"version": 6`},
		{"segment", "invite", "mist", "", "", `"form": "mist"`},
		{"snowflake", "", "friendly", "evt", "", `"evt_2026`},
	} {
		fields, _ := json.Marshal(map[string]string{"kind": c.kind, "name": c.name, "form": c.form, "prefix": c.prefix, "namespace": c.namespace})
		set := `(() => { const f = document.getElementById("take"); for (const [k, v] of Object.entries(` + string(fields) + `)) f.elements[k].value = v; return ""; })()`
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](set)); err != nil {
			t.Fatal(err)
		}
		// Submitted by the form itself, not by a click at the button's
		// place: the live tables above it move it as they update, and on a
		// busy machine a click landed beside it (the answer never came).
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { document.getElementById("take").requestSubmit(); return ""; })()`)); err != nil {
			t.Fatal(err)
		}
		deadline = time.Now().Add(30 * time.Second)
		for !strings.Contains(text(`#take-result`), c.want) {
			if time.Now().After(deadline) {
				t.Fatalf("Take %s answered %q, want %s", c.kind, text(`#take-result`), c.want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A store outage: the page says the store is down and which tags are
	// still served from their buffers.
	f.store.SetDown(true)
	deadline = time.Now().Add(30 * time.Second)
	for text(`#store-state`) != "down" || !strings.Contains(text(`#alerts`), "does not answer") {
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show the store down: %q / %q", text(`#store-state`), text(`#alerts`))
		}
		time.Sleep(100 * time.Millisecond)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("FROND_TEST_OUTPUT")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("the page logged problems:\n%s", strings.Join(problems, "\n"))
	}
}
