package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

func kindsFixture(t *testing.T, opts api.Options) *fixture {
	return newFixture(t, opts, func(c *service.Config) {
		c.ObfuscationKey = []byte("sixteen bytes at the very least")
		c.Serials = map[string]service.SerialConfig{
			"pay": {Template: "PAY{time:yyyyMMdd}{seq:6}", Reset: "day"},
			"ord": {Template: "ORD{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", Source: "snowflake"},
		}
		c.Forms = map[string]string{"order": service.FormOpaque}
	})
}

func TestV1UUID(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/uuid", ""), 200, `"version":4`, `"uuid":"`)
	r := f.do("POST", "/v1/uuid?version=7&n=3", "")
	f.want(r, 200, `"version":7`, `"uuids":["`)
	var out struct{ UUIDs []string }
	json.Unmarshal([]byte(r.body), &out)
	if len(out.UUIDs) != 3 || !(out.UUIDs[0] < out.UUIDs[1] && out.UUIDs[1] < out.UUIDs[2]) {
		t.Fatalf("v7 batch %v", out.UUIDs)
	}
	for _, q := range []string{"version=5", "version=x", "n=0", "n=10001"} {
		f.want(f.do("GET", "/v1/uuid?"+q, ""), 400, `"code":"invalid_argument"`)
	}
}

func TestV1Serial(t *testing.T) {
	f := kindsFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/serial/pay", ""), 200, `"serial":"PAY20261122000001"`)
	f.want(f.do("POST", "/v1/serial/pay?n=2", ""), 200, `"serials":["PAY20261122000002","PAY20261122000003"]`)
	f.want(f.do("GET", "/v1/serial/ord?n=2", ""), 200, `"ORD2026112212000000000030000","ORD2026112212000000000030001"`)
	f.want(f.do("GET", "/v1/serial/nope", ""), 404, `"code":"serial_not_found"`, "not configured", "configure it under serials:")
	f.want(f.do("GET", "/v1/serial/pay?n=0", ""), 400, `"code":"invalid_argument"`)
}

func TestV1Forms(t *testing.T) {
	f := kindsFixture(t, api.Options{AdminToken: "tok"})
	// The tag's configured form is opaque: /v1 and Leaf's API give opaque numbers.
	r := f.do("GET", "/v1/segment/order", "")
	f.want(r, 200, `"form":"opaque"`)
	var one struct {
		ID    int64
		IDStr string `json:"id_str"`
	}
	json.Unmarshal([]byte(r.body), &one)
	if one.ID == 1 || strconv.FormatInt(one.ID, 10) != one.IDStr {
		t.Fatalf("opaque ID %+v", one)
	}
	leaf := f.do("GET", "/api/segment/get/order", "")
	f.want(leaf, 200)
	if leaf.body == "2" {
		t.Fatal("Leaf's API gave the plain ID of an opaque tag")
	}
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"opaque","value":"`+one.IDStr+`"}`, "Authorization", "Bearer tok"), 200, `"id":1,`)
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"opaque","value":"`+leaf.body+`"}`, "Authorization", "Bearer tok"), 200, `"id":2,`)
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"opaque","value":"1"}`), 401)

	// Explicit forms.
	r = f.do("GET", "/v1/segment/order?n=3&form=base62", "")
	f.want(r, 200, `"id_strs":["00000000003","00000000004","00000000005"]`, `"form":"base62"`)
	if strings.Contains(r.body, `"ids"`) {
		t.Fatalf("a string form gave numbers: %s", r.body)
	}
	r = f.do("GET", "/v1/snowflake?n=2&form=opaque62", "")
	f.want(r, 200, `"form":"opaque62"`)
	var many struct {
		IDStrs []string `json:"id_strs"`
	}
	json.Unmarshal([]byte(r.body), &many)
	for _, v := range many.IDStrs {
		f.want(f.do("POST", "/v1/reveal", `{"kind":"snowflake","form":"opaque62","value":"`+v+`"}`, "Authorization", "Bearer tok"), 200, `"kind":"snowflake"`)
	}
	f.want(f.do("GET", "/v1/segment/order?form=base32", ""), 200, `"id_str":"`)
	f.want(f.do("GET", "/v1/segment/order?form=xml", ""), 400, `"code":"invalid_argument"`)
	f.want(f.do("GET", "/v1/segment/order?n=5&format=ranges&form=base62", ""), 400, "cannot be given in form")
	f.want(f.do("POST", "/v1/reveal", `{"kind":"uuid","form":"number","value":"1"}`, "Authorization", "Bearer tok"), 400)
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"base62","value":"!!"}`, "Authorization", "Bearer tok"), 400)

	plain := newFixture(t, api.Options{})
	plain.want(plain.do("GET", "/v1/segment/order?form=opaque", ""), 400, "obfuscation key")
}
