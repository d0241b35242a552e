package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	httpapi "github.com/frond-id/frond/api/http"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

// frond tag list reads the tags a page at a time (GET /v1/tags?after=) and
// prints every one, once, in order, with one header.
func TestCLI_TagListPages(t *testing.T) {
	st := storetest.NewFaulty()
	svc := apitest.Service(t, st, service.Config{})
	const n = 2*service.DefaultTagPage + 7
	for i := range n {
		if _, err := st.CreateTag(context.Background(), frond.Tag{Name: fmt.Sprintf("t%05d", i), Step: 10}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpapi.New(svc, api.Options{}))
	defer srv.Close()
	code, out, errs := runCLI(t, nil, "tag", "list", "--server", srv.URL)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n+1 || strings.Count(out, "TAG ") != 1 {
		t.Fatalf("%d lines for %d tags (and a header): %.200s", len(lines), n, out)
	}
	for i, l := range lines[1:] {
		if want := fmt.Sprintf("t%05d ", i); !strings.HasPrefix(l, want) {
			t.Fatalf("line %d: %q, want %q first", i+1, l, want)
		}
	}
}
