package httpsource_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clienttest"
	"github.com/frond-id/frond/client/httpsource"
)

// Both of frond's IDSources: the leasing client and this one.
var _ = []frond.IDSource{(*client.Client)(nil), (*httpsource.Client)(nil)}

func TestClient(t *testing.T) {
	srv := clienttest.Start(t)
	srv.CreateTag(t, "order", 100)
	c, err := httpsource.New(srv.HTTPURL, httpsource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if id, err := c.Next(ctx, "order"); err != nil || id != 1 {
		t.Fatalf("Next = %d, %v", id, err)
	}
	if ids, err := c.NextN(ctx, "order", 3); err != nil || len(ids) != 3 || ids[0] != 2 || ids[2] != 4 {
		t.Fatalf("NextN = %v, %v", ids, err)
	}
	if ids, err := c.Snowflake(ctx, 2); err != nil || len(ids) != 2 || ids[1] <= ids[0] {
		t.Fatalf("Snowflake = %v, %v", ids, err)
	}
	if _, err := c.Next(ctx, "nope"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("a missing tag: %v", err)
	}
	if _, err := c.NextN(ctx, "order", 0); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("n 0: %v", err)
	}
	if _, err := httpsource.New("id-1:8080", httpsource.Options{}); err == nil {
		t.Fatal("a server without a scheme")
	}
	srv.Stop()
	if _, err := c.Next(ctx, "order"); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("a server gone: %v", err)
	}
}

// A tag answered in a text form: refused, and from then on without a
// request (each would take IDs only to throw them away).
func TestClient_TextForm(t *testing.T) {
	srv := clienttest.Start(t, clienttest.WithForms(map[string]string{"b": "base62"}))
	srv.CreateTag(t, "b", 100)
	c, _ := httpsource.New(srv.HTTPURL, httpsource.Options{})
	for range 3 {
		if _, err := c.NextN(context.Background(), "b", 4); !errors.Is(err, frond.ErrFormNotCarried) {
			t.Fatalf("NextN: %v", err)
		}
	}
	resp, err := http.Get(srv.HTTPURL + "/v1/segment/b")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"id_str":"00000000005"`) { // the first refusal took 4
		t.Fatalf("next ID: %s", b)
	}
}
