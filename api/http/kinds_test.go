package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond"
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
	// base62 encodes the tag's number: its opaque number, not the counter.
	r = f.do("GET", "/v1/segment/order?n=3&form=base62", "")
	f.want(r, 200, `"form":"base62"`)
	if strings.Contains(r.body, `"00000000003"`) {
		t.Fatalf("base62 of an opaque tag gave its counter: %s", r.body)
	}
	f.want(f.do("GET", "/v1/segment/order?form=number", ""), 200, `"id_str"`)
	f.want(f.do("GET", "/v1/segment/order?form=mist", ""), 400, `"code":"invalid_argument"`, "opaque numbers (its mapping)")
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

// The schemes of issue 33 over /v1: UUID versions 1, 3, 5 and 6, TypeIDs,
// Mist, the friendly snowflake form and prefixes, each refused strictly
// (a refused request takes no ID) and revealed back.
func TestV1Schemes(t *testing.T) {
	f := newFixture(t, api.Options{AdminToken: "tok"}, func(c *service.Config) {
		c.Prefixes = map[string]string{"order": "ord"}
		c.Forms = map[string]string{"mist": service.FormMist}
	})
	admin := []string{"Authorization", "Bearer tok"}
	if _, err := f.svc.CreateTag(t.Context(), frond.Tag{Name: "mist", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	f.want(f.do("GET", "/v1/uuid?version=5&namespace=dns&name=example.com", ""), 200, `"uuid":"cfbff0d1-9375-5685-968c-48ce8b15ae17"`, `"version":5`)
	f.want(f.do("GET", "/v1/uuid?version=3&namespace=dns&name=python.org&n=1", ""), 200, `"uuids":["6fa459ea-ee8a-3ca4-894e-db77e160355e"]`)
	for _, v := range []string{"1", "6"} {
		r := f.do("GET", "/v1/uuid?version="+v+"&n=3", "")
		f.want(r, 200, `"version":`+v)
		var out struct{ UUIDs []string }
		json.Unmarshal([]byte(r.body), &out)
		if len(out.UUIDs) != 3 || out.UUIDs[0][14] != v[0] || out.UUIDs[0] == out.UUIDs[1] {
			t.Fatalf("v%s: %v", v, out.UUIDs)
		}
	}
	r := f.do("GET", "/v1/uuid?version=7&form=typeid&prefix=user", "")
	f.want(r, 200, `"form":"typeid"`, `"uuid":"user_0`)
	var tid struct{ UUID string }
	json.Unmarshal([]byte(r.body), &tid)
	r = f.do("POST", "/v1/reveal", `{"kind":"uuid","form":"typeid","value":"`+tid.UUID+`","prefix":"user"}`, admin...)
	f.want(r, 200, `"uuid":"`, `"prefix":"user"`)
	if strings.Contains(r.body, `"id"`) {
		t.Fatalf("a TypeID's reveal has an ID: %s", r.body)
	}
	f.want(f.do("POST", "/v1/reveal", `{"kind":"uuid","form":"typeid","value":"`+tid.UUID+`","prefix":"team"}`, admin...), 400, "does not carry prefix")
	for _, q := range []string{"version=2", "version=5&namespace=dns", "version=5&namespace=dns&name=", "version=5&name=a",
		"version=5&namespace=dns&name=a&n=2", "version=4&name=a", "version=4&form=typeid", "version=7&form=typeid&prefix=User",
		"version=7&prefix=user", "version=7&form=mist", "namespace=web&version=3&name=a", "version=7&form=typeid&prefix=a&extra=1"} {
		f.want(f.do("GET", "/v1/uuid?"+q, ""), 400, `"code":"invalid_argument"`)
	}

	// Mist: the tag's configured form, and asked for; the counter is the ID.
	r = f.do("GET", "/v1/segment/mist?n=3", "")
	f.want(r, 200, `"form":"mist"`)
	var ms struct {
		IDs    []int64
		IDStrs []string `json:"id_strs"`
	}
	json.Unmarshal([]byte(r.body), &ms)
	for i, id := range ms.IDs {
		if id>>16 != int64(i+1) {
			t.Fatalf("mist IDs %v", ms.IDs)
		}
	}
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"mist","value":"`+ms.IDStrs[2]+`"}`, admin...), 200, `"id":3,`, `"salts":[`)
	f.want(f.do("GET", "/api/segment/get/mist", ""), 200) // Leaf's API: a number
	f.want(f.do("GET", "/v1/segment/mist?format=ranges", ""), 409, `"code":"form_not_carried"`)

	// Prefixes: configured for order, asked for per request; numbers refuse them.
	f.want(f.do("GET", "/v1/segment/order?form=base62", ""), 200, `"id_str":"ord_00000000001"`)
	f.want(f.do("GET", "/v1/segment/order?form=base62&prefix=po", ""), 200, `"id_str":"po_00000000002"`)
	f.want(f.do("GET", "/v1/segment/order", ""), 200, `"id":3`)
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"base62","value":"ord_00000000001","tag":"order"}`, admin...), 200, `"id":1,`, `"prefix":"ord"`)
	f.want(f.do("POST", "/v1/reveal", `{"kind":"segment","form":"base62","value":"po_00000000002","tag":"order"}`, admin...), 400, `does not carry prefix \"ord\"`)
	for _, q := range []string{"prefix=ord", "form=base62&prefix=Ord", "form=mist&prefix=m", "form=base62&prefix=" + strings.Repeat("a", 64)} {
		f.want(f.do("GET", "/v1/segment/order?"+q, ""), 400, `"code":"invalid_argument"`)
	}
	f.want(f.do("GET", "/v1/segment/order", ""), 200, `"id":4`) // the refusals took nothing

	// Friendly snowflake IDs: time-node-sequence, and back.
	r = f.do("GET", "/v1/snowflake?form=friendly&prefix=evt", "")
	f.want(r, 200, `"form":"friendly"`, `"id_str":"evt_20261122120000000-`)
	var fr struct {
		IDStr string `json:"id_str"`
	}
	json.Unmarshal([]byte(r.body), &fr)
	f.want(f.do("POST", "/v1/reveal", `{"kind":"snowflake","form":"friendly","value":"`+fr.IDStr+`"}`, admin...), 200, `"prefix":"evt"`, `"id_str":"`)
	f.want(f.do("GET", "/v1/snowflake?form=mist", ""), 400, `"code":"invalid_argument"`)
	f.want(f.do("GET", "/v1/segment/order?form=friendly", ""), 400, `"code":"invalid_argument"`)
}
