package clientmetrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clientmetrics"
	"github.com/frond-id/frond/client/clienttest"
)

func TestCollector(t *testing.T) {
	srv := clienttest.Start(t)
	srv.CreateTag(t, "order", 1000)
	c, err := client.New(client.Options{Servers: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 5 {
		if _, err := c.Next(context.Background(), "order"); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(clientmetrics.New(c))
	want := `
# HELP frond_client_ids_total Segment IDs handed out from a tag's leases.
# TYPE frond_client_ids_total counter
frond_client_ids_total{tag="order"} 5
# HELP frond_client_lease_remaining IDs left in a tag's leased ranges.
# TYPE frond_client_lease_remaining gauge
frond_client_lease_remaining{tag="order"} 995
# HELP frond_client_server_up 1 when the server is up as the client sees it, 0 while it rests after a failure.
# TYPE frond_client_server_up gauge
frond_client_server_up{server="` + srv.Addr + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "frond_client_ids_total", "frond_client_lease_remaining", "frond_client_server_up"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n < 9 {
		t.Fatalf("%d series, %v", n, err)
	}
}
