package resp

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

// command is one entry of the command table: its arity (with the name;
// max -1: any), what COMMAND says of it, and what it does.
type command struct {
	min, max int
	flags    []string
	summary  string
	run      func(s *Server, c redcon.Conn, args [][]byte)
}

// table is the command table (docs/resp.md). Names are lower case.
func table() map[string]command {
	return map[string]command{
		"incr":      {2, 2, []string{"write", "fast"}, "the next segment ID of a tag, as an integer", (*Server).incr},
		"segment":   {2, 12, []string{"write"}, "SEGMENT tag [COUNT n] [FORM f] [PREFIX p] [SHARD s | SHARD-KEY k] [IDEMPOTENCY-KEY k]: segment IDs", (*Server).segment},
		"ranges":    {3, 5, []string{"write"}, "RANGES tag n [IDEMPOTENCY-KEY k]: n segment IDs as [start, end, stride] ranges (end exclusive)", (*Server).ranges},
		"snowflake": {1, 11, []string{"write", "fast"}, "SNOWFLAKE [COUNT n] [FORM f] [PREFIX p] [SHARD s | SHARD-KEY k] [IDEMPOTENCY-KEY k]: snowflake IDs (a shard with snowflake.shard_bits)", (*Server).snowflake},
		"uuid":      {1, 15, []string{"fast"}, "UUID [VERSION 1|3|4|5|6|7] [COUNT n] [NAMESPACE ns NAME x] [FORM typeid [PREFIX p]] [IDEMPOTENCY-KEY k]: UUIDs", (*Server).uuid},
		"serial":    {2, 6, []string{"write"}, "SERIAL name [COUNT n] [IDEMPOTENCY-KEY k]: business serial numbers", (*Server).serial},
		"seq":       {3, 7, []string{"write"}, "SEQ space key [COUNT n] [IDEMPOTENCY-KEY k]: the next value(s) of a key in a keyed sequence space", (*Server).seq},
		"decode":    {2, 4, []string{"readonly", "fast"}, "DECODE id [LAYOUT l]: a snowflake ID's time, node and sequence", (*Server).decode},
		"compose":   {2, 14, []string{"readonly", "fast"}, "COMPOSE time [NODE n | DATACENTER d WORKER w] [SEQUENCE s] [SHARD s | SHARD-KEY k] [LAYOUT l]: the snowflake ID of those fields, decoded", (*Server).compose},
		"bounds":    {4, 12, []string{"readonly", "fast"}, "BOUNDS snowflake|uuid from to [LAYOUT l] [VERSION 1|6|7] [FORM typeid] [PREFIX p]: the first and the last ID issued in [from, to)", (*Server).bounds},
		"tag":       {2, 9, []string{"admin", "write"}, "TAG LIST | GET name | CREATE name STEP s [MAXID m] [DESCRIPTION d] | UPDATE name [STEP s] [MAXID m] [DESCRIPTION d] | DELETE name (admin)", (*Server).tag},
		"space":     {2, 9, []string{"admin", "write"}, "SPACE CREATE name [STEP s] [SECTIONS n] [SLOTS n] | LIST: keyed sequence spaces (admin)", (*Server).space},
		"reveal":    {4, 9, []string{"admin", "readonly"}, "REVEAL kind form value [key_version] [PREFIX p] [TAG t]: the ID behind a formatted one, or a TypeID's UUID (admin)", (*Server).reveal},
		"info":      {1, 2, []string{"readonly"}, "INFO [section]: server, worker, store, tags", (*Server).info},
		"ping":      {1, 2, []string{"fast"}, "PING [message]", ping},
		"echo":      {2, 2, []string{"fast"}, "ECHO message", func(_ *Server, c redcon.Conn, a [][]byte) { c.WriteBulk(a[1]) }},
		"quit":      {1, 1, []string{"fast"}, "QUIT", func(_ *Server, c redcon.Conn, _ [][]byte) { c.WriteString("OK"); hangUp(c) }},
		"hello":     {1, -1, []string{"fast"}, "HELLO [2 [AUTH user token] [SETNAME name]]: RESP2 only", (*Server).hello},
		"auth":      {2, 3, []string{"fast"}, "AUTH [user] token: the admin token", (*Server).auth},
		"token":     {2, 2, []string{"fast"}, "TOKEN token: the tag token of this connection's segment commands (tokens:)", setToken},
		"client":    {2, -1, []string{"fast"}, "CLIENT SETNAME|GETNAME|SETINFO|ID", client},
		"select":    {2, 2, []string{"fast"}, "SELECT 0: frond has one database", selectDB},
		"command":   {1, -1, []string{"readonly"}, "COMMAND [COUNT|DOCS|INFO]", (*Server).command},
		"config":    {3, 3, []string{"readonly"}, "CONFIG GET name: name with an empty value (frond has no Redis parameters)", configGet},
	}
}

// idemKey is the option of a request's idempotency key
// (service.Request.IdempotencyKey).
const idemKey = "IDEMPOTENCY-KEY"

func sess(c redcon.Conn) *session {
	if s, ok := c.Context().(*session); ok {
		return s
	}
	s := &session{}
	c.SetContext(s)
	return s
}

// write answers the IDs of a: one ID as an integer (numeric forms) or a
// bulk string, a COUNT as an array.
func write(c redcon.Conn, a service.Answer) {
	numeric := a.Nums != nil
	if a.Request.Count == 0 {
		if numeric {
			c.WriteInt64(a.Nums[0])
		} else {
			c.WriteBulkString(a.Strs[0])
		}
		return
	}
	if numeric {
		c.WriteArray(len(a.Nums))
		for _, id := range a.Nums {
			c.WriteInt64(id)
		}
		return
	}
	c.WriteArray(len(a.Strs))
	for _, str := range a.Strs {
		c.WriteBulkString(str)
	}
}

func (s *Server) take(c redcon.Conn, r service.Request) {
	ctx := s.base
	if r.Kind == service.KindSerial || r.Kind == service.KindSeq {
		// A serial may create its period's tag in the store, a keyed
		// sequence raise a section or go to its owner: bound them as the
		// admin commands are. Segment waits are bounded by the engine.
		var cancel context.CancelFunc
		ctx, cancel = s.ctx()
		defer cancel()
	}
	if s.o.Guard.WantsCaller(r.IdempotencyKey != "", r.Kind == service.KindSeq) {
		// Who asks: its idempotency keys are its own, and the keyed
		// sequence spaces it starts are counted against it.
		ctx = api.WithCaller(ctx, sess(c).token, c.RemoteAddr())
	}
	a, err := s.svc.Take(ctx, r)
	if err != nil {
		s.writeErr(c, err)
		return
	}
	write(c, a)
	held(c, a)
}

// held keeps a's place in the node's answer budget until its reply is
// flushed (limitConn.hold); a connection of another kind (a test's) has
// its reply written at once.
func held(c redcon.Conn, a service.Answer) {
	if lc, ok := c.NetConn().(*limitConn); ok {
		lc.hold(&a)
		return
	}
	a.Release()
}

func (s *Server) incr(c redcon.Conn, args [][]byte) {
	ss := sess(c)
	s.take(c, service.Request{Kind: service.KindSegment, Name: ss.tag(args[1]), Numbers: true, Token: ss.token})
}

func (s *Server) segment(c redcon.Conn, args [][]byte) {
	if opts, n, ok := s.countOptions(c, args[2:], "COUNT", "FORM", "PREFIX", idemKey, "SHARD", "SHARD-KEY"); ok {
		ss := sess(c)
		r := service.Request{Kind: service.KindSegment, Name: ss.tag(args[1]), Count: n, Form: opts["FORM"], Prefix: opts["PREFIX"], Token: ss.token, IdempotencyKey: opts[idemKey]}
		if err := shardOf(opts, &r); err != nil {
			s.writeErr(c, err)
			return
		}
		s.take(c, r)
	}
}

// shardOf reads the options SHARD s or SHARD-KEY k of a request for a tag
// or a layout with shard bits into r; the service checks them.
func shardOf(opts map[string]string, r *service.Request) error {
	if v, ok := opts["SHARD"]; ok {
		shard, digits := service.Digits(v)
		if !digits {
			return fmt.Errorf("%w: SHARD %q: a whole number from 0", frond.ErrInvalidArgument, quote([]byte(v)))
		}
		r.Shard, r.HasShard = shard, true
	}
	if k, ok := opts["SHARD-KEY"]; ok {
		if k == "" {
			return fmt.Errorf("%w: SHARD-KEY: an empty key", frond.ErrInvalidArgument)
		}
		r.ShardKey = k
	}
	return nil
}

// countOptions reads the options of args (see options) with COUNT among
// them; it answers the error itself and reports false.
func (s *Server) countOptions(c redcon.Conn, args [][]byte, allowed ...string) (map[string]string, int64, bool) {
	opts, err := options(args, allowed...)
	var n int64
	if err == nil {
		n, err = count(opts)
	}
	if err != nil {
		s.writeErr(c, err)
		return nil, 0, false
	}
	return opts, n, true
}

func (s *Server) ranges(c redcon.Conn, args [][]byte) {
	n, err := count(map[string]string{"COUNT": string(args[2])})
	var opts map[string]string
	if err == nil {
		opts, err = options(args[3:], idemKey)
	}
	if err != nil {
		s.writeErr(c, err)
		return
	}
	// Who asks, for the limits where the IDs are taken (ranges: the lease
	// rate).
	ctx := s.base
	if s.o.Guard.WantsCaller(opts[idemKey] != "", false) {
		ctx = api.WithCaller(ctx, sess(c).token, c.RemoteAddr())
	}
	a, err := s.svc.Take(ctx, service.Request{Kind: service.KindSegment, Name: string(args[1]), Count: n, Ranges: true, Token: sess(c).token, IdempotencyKey: opts[idemKey]})
	if err != nil {
		s.writeErr(c, err)
		return
	}
	c.WriteArray(len(a.Ranges))
	for _, r := range a.Ranges {
		c.WriteArray(3)
		c.WriteInt64(r.Start)
		c.WriteInt64(r.End)
		c.WriteInt64(r.Stride)
	}
	held(c, a)
}

func (s *Server) snowflake(c redcon.Conn, args [][]byte) {
	if opts, n, ok := s.countOptions(c, args[1:], "COUNT", "FORM", "PREFIX", idemKey, "SHARD", "SHARD-KEY"); ok {
		r := service.Request{Kind: service.KindSnowflake, Count: n, Form: opts["FORM"], Prefix: opts["PREFIX"], IdempotencyKey: opts[idemKey]}
		if err := shardOf(opts, &r); err != nil {
			s.writeErr(c, err)
			return
		}
		s.take(c, r)
	}
}

func (s *Server) uuid(c redcon.Conn, args [][]byte) {
	opts, n, ok := s.countOptions(c, args[1:], "VERSION", "COUNT", "NAMESPACE", "NAME", "FORM", "PREFIX", idemKey)
	if !ok {
		return
	}
	r := service.Request{Kind: service.KindUUID, Count: n, Namespace: opts["NAMESPACE"], Name: opts["NAME"], Form: opts["FORM"], Prefix: opts["PREFIX"], IdempotencyKey: opts[idemKey]}
	if v, ok := opts["VERSION"]; ok {
		n, ok := service.Digits(v)
		if !ok || n < 1 || n > 9 {
			s.writeErr(c, fmt.Errorf("%w: VERSION %q: 1, 3, 4, 5, 6 or 7", frond.ErrInvalidArgument, quote([]byte(v))))
			return
		}
		r.Version = int(n)
	}
	if name, ok := opts["NAME"]; ok && name == "" {
		s.writeErr(c, fmt.Errorf("%w: NAME: a name-based UUID needs a name", frond.ErrInvalidArgument))
		return
	}
	s.take(c, r)
}

func (s *Server) serial(c redcon.Conn, args [][]byte) {
	if opts, n, ok := s.countOptions(c, args[2:], "COUNT", idemKey); ok {
		s.take(c, service.Request{Kind: service.KindSerial, Name: string(args[1]), Count: n, IdempotencyKey: opts[idemKey]})
	}
}

func (s *Server) seq(c redcon.Conn, args [][]byte) {
	if opts, n, ok := s.countOptions(c, args[3:], "COUNT", idemKey); ok {
		s.take(c, service.Request{Kind: service.KindSeq, Name: string(args[1]), Key: string(args[2]), Count: n, Token: sess(c).token, IdempotencyKey: opts[idemKey]})
	}
}

func (s *Server) decode(c redcon.Conn, args [][]byte) {
	opts, err := options(args[2:], "LAYOUT")
	if err != nil {
		s.writeErr(c, err)
		return
	}
	id, perr := strconv.ParseInt(string(args[1]), 10, 64)
	if perr != nil || id < 0 {
		s.writeErr(c, fmt.Errorf("%w: ID %q: a snowflake ID, a whole number from 0", frond.ErrInvalidArgument, quote(args[1])))
		return
	}
	d, err := s.svc.Decode(id, opts["LAYOUT"])
	if err != nil {
		s.writeErr(c, err)
		return
	}
	writeDecoded(c, d)
}

// compose: COMPOSE time [NODE n | DATACENTER d WORKER w] [SEQUENCE s] [SHARD s | SHARD-KEY k]
// [LAYOUT l], answered as DECODE answers.
func (s *Server) compose(c redcon.Conn, args [][]byte) {
	d, err := func() (service.Decoded, error) {
		opts, err := options(args[2:], "NODE", "DATACENTER", "WORKER", "SEQUENCE", "LAYOUT", "SHARD", "SHARD-KEY")
		if err != nil {
			return service.Decoded{}, err
		}
		r := service.ComposeRequest{Layout: opts["LAYOUT"], ShardKey: opts["SHARD-KEY"]}
		if r.Time, err = service.ParseTime("time", string(args[1])); err != nil {
			return service.Decoded{}, err
		}
		for _, f := range []struct {
			name string
			to   *int64
			ptr  **int64
		}{{"NODE", &r.Node, nil}, {"SEQUENCE", &r.Seq, nil}, {"SHARD", &r.Shard, nil}, {"DATACENTER", nil, &r.Datacenter}, {"WORKER", nil, &r.Worker}} {
			v, ok := opts[f.name]
			if !ok {
				continue
			}
			n, digits := service.Digits(v)
			if !digits {
				return service.Decoded{}, fmt.Errorf("%w: %s %q: a whole number from 0", frond.ErrInvalidArgument, f.name, quote([]byte(v)))
			}
			if f.to != nil {
				*f.to = n
			} else {
				*f.ptr = &n
			}
		}
		return s.svc.Compose(r)
	}()
	if err != nil {
		s.writeErr(c, err)
		return
	}
	writeDecoded(c, d)
}

// bounds: BOUNDS snowflake|uuid from to [LAYOUT l] [VERSION v] [FORM
// typeid] [PREFIX p]: the first and the last ID, integers for snowflake
// IDs, texts for UUIDs.
func (s *Server) bounds(c redcon.Conn, args [][]byte) {
	b, err := func() (service.Bounds, error) {
		opts, err := options(args[4:], "LAYOUT", "VERSION", "FORM", "PREFIX")
		if err != nil {
			return service.Bounds{}, err
		}
		r := service.BoundsRequest{Kind: strings.ToLower(string(args[1])), Layout: opts["LAYOUT"], Form: opts["FORM"], Prefix: opts["PREFIX"]}
		if r.From, err = service.ParseTime("from", string(args[2])); err != nil {
			return service.Bounds{}, err
		}
		if r.To, err = service.ParseTime("to", string(args[3])); err != nil {
			return service.Bounds{}, err
		}
		if v, ok := opts["VERSION"]; ok {
			n, digits := service.Digits(v)
			if !digits || n < 1 || n > 8 {
				return service.Bounds{}, fmt.Errorf("%w: VERSION %q: 1, 6 or 7", frond.ErrInvalidArgument, quote([]byte(v)))
			}
			r.Version = int(n)
		}
		return s.svc.IDBounds(r)
	}()
	if err != nil {
		s.writeErr(c, err)
		return
	}
	c.WriteArray(2)
	if b.Kind == service.KindSnowflake {
		c.WriteInt64(b.FirstID)
		c.WriteInt64(b.LastID)
		return
	}
	c.WriteBulkString(b.First)
	c.WriteBulkString(b.Last)
}

// writeDecoded answers a decoded snowflake ID as field, value pairs.
func writeDecoded(c redcon.Conn, d service.Decoded) {
	n := 12
	if d.Datacenter != nil {
		n += 4
	}
	if d.Shard != nil {
		n += 2
	}
	c.WriteArray(n)
	c.WriteBulkString("id")
	c.WriteInt64(d.ID)
	c.WriteBulkString("layout")
	c.WriteBulkString(d.Layout)
	c.WriteBulkString("time")
	c.WriteBulkString(d.Time.UTC().Format(time.RFC3339Nano))
	c.WriteBulkString("tick")
	c.WriteInt64(d.Tick)
	c.WriteBulkString("node")
	c.WriteInt64(d.Node)
	c.WriteBulkString("sequence")
	c.WriteInt64(d.Seq)
	if d.Datacenter != nil {
		c.WriteBulkString("datacenter")
		c.WriteInt64(*d.Datacenter)
		c.WriteBulkString("worker")
		c.WriteInt64(*d.Worker)
	}
	if d.Shard != nil {
		c.WriteBulkString("shard")
		c.WriteInt64(*d.Shard)
	}
}

func (s *Server) info(c redcon.Conn, args [][]byte) {
	want := ""
	if len(args) > 1 {
		want = strings.ToLower(string(args[1]))
	}
	var b strings.Builder
	section := func(name string, lines ...string) {
		if want != "" && want != "all" && want != "everything" && want != name {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(name[:1]) + name[1:] + "\r\n")
		for _, l := range lines {
			b.WriteString(l + "\r\n")
		}
	}
	section("server", "frond_mode:id service", "redis_version:7.0.0", "resp:2",
		"connected_clients:"+strconv.FormatInt(s.conns.Open(), 10))
	w := s.svc.WorkerInfo()
	section("worker", "worker_id:"+strconv.FormatInt(w.ID, 10), "held:"+flag(w.Held), "issuing:"+flag(w.Issuing),
		"layout:"+s.svc.Layout().Name)
	ctx, cancel := s.ctx()
	defer cancel()
	ready := s.svc.SegmentReady(ctx)
	store := []string{"ready:" + flag(ready.Ready)}
	if ready.Detail != "" {
		store = append(store, "detail:"+oneLine(ready.Detail))
	}
	section("store", store...)
	// Tag details are the admin's (mayAdmin), as GET /v1/tags.
	tags := []string{"hidden:tag details need AUTH with the admin token"}
	if s.mayAdmin(c) == nil {
		// The infoTags that need attention first, as /readyz: INFO stays
		// small whatever the number of tags.
		all := s.svc.SegmentOverview().Tags
		sum, shown := api.RankTags(all, infoTags, nil)
		tags = []string{fmt.Sprintf("tags_total:%d", sum.Total), fmt.Sprintf("tags_failing:%d", sum.Failing),
			fmt.Sprintf("tags_low:%d", sum.Low), fmt.Sprintf("tags_shown:%d", len(shown))}
		for _, i := range shown {
			st := &all[i]
			h := int64(-1)
			if st.Horizon >= 0 {
				h = int64(st.Horizon.Seconds())
			}
			tags = append(tags, fmt.Sprintf("%s:step=%d,loads=%d,next_ready=%s,horizon_seconds=%d",
				st.Tag, st.Step, st.Loads, flag(st.NextReady), h))
		}
	}
	section("tags", tags...)
	c.WriteBulkString(b.String())
}

// infoTags bounds the tags INFO lists.
const infoTags = 20

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

func ping(_ *Server, c redcon.Conn, args [][]byte) {
	if len(args) > 1 {
		c.WriteBulk(args[1])
		return
	}
	c.WriteString("PONG")
}

// hello answers HELLO: RESP2 only (a client asking for 3 gets NOPROTO, as
// from a Redis that does not speak it, and goes on in RESP2).
func (s *Server) hello(c redcon.Conn, args [][]byte) {
	if len(args) > 1 {
		if v := string(args[1]); v != "2" {
			c.WriteError("NOPROTO unsupported protocol version: frond speaks RESP2")
			return
		}
	}
	for i := 2; i < len(args); i++ {
		switch strings.ToUpper(string(args[i])) {
		case "AUTH":
			if i+2 >= len(args) {
				c.WriteError("ERR syntax error in HELLO option 'AUTH'")
				return
			}
			if !s.checkToken(c, args[i+2]) {
				return
			}
			sess(c).authed = true
			i += 2
		case "SETNAME":
			if i+1 >= len(args) {
				c.WriteError("ERR syntax error in HELLO option 'SETNAME'")
				return
			}
			if !setName(c, args[i+1]) {
				return
			}
			i++
		default:
			c.WriteError(fmt.Sprintf("ERR syntax error in HELLO option '%s'", quote(args[i])))
			return
		}
	}
	c.WriteArray(14)
	for _, kv := range [][2]string{{"server", "frond"}, {"version", "7.0.0"}, {"mode", "standalone"}, {"role", "master"}} {
		c.WriteBulkString(kv[0])
		c.WriteBulkString(kv[1])
	}
	c.WriteBulkString("proto")
	c.WriteInt(2)
	c.WriteBulkString("id")
	c.WriteInt64(0)
	c.WriteBulkString("modules")
	c.WriteArray(0)
}

// checkToken checks an admin token (AUTH, HELLO's AUTH) with the one
// check of every protocol (api.Guard.AdminToken): a wrong one is answered
// WRONGPASS and counts against the address, whose connection is closed
// once it reaches the limit. It reports whether t is the admin token.
func (s *Server) checkToken(c redcon.Conn, t []byte) bool {
	ok, limited := s.o.Guard.AdminToken(s.o.AdminToken, string(t), c.RemoteAddr())
	if !ok {
		s.o.Metrics.Failed(api.RESP, frond.CodeUnauthorized)
		c.WriteError("WRONGPASS invalid admin token")
		if limited {
			hangUp(c)
		}
	}
	return ok
}

func (s *Server) auth(c redcon.Conn, args [][]byte) {
	if !s.checkToken(c, args[len(args)-1]) {
		return
	}
	sess(c).authed = true
	c.WriteString("OK")
}

// setToken sets the connection's tag token (service.Config.Tokens); it is
// checked with each segment command, not here.
func setToken(_ *Server, c redcon.Conn, args [][]byte) {
	if len(args[1]) > maxToken {
		c.WriteError(fmt.Sprintf("INVALID_ARGUMENT a token of %d bytes: tokens are at most %d", len(args[1]), maxToken))
		return
	}
	sess(c).token = string(args[1])
	c.WriteString("OK")
}

func client(_ *Server, c redcon.Conn, args [][]byte) {
	switch strings.ToUpper(string(args[1])) {
	case "SETNAME":
		if len(args) != 3 {
			c.WriteError("ERR wrong number of arguments for 'client|setname' command")
			return
		}
		if setName(c, args[2]) {
			c.WriteString("OK")
		}
	case "GETNAME":
		if n := sess(c).name; n != "" {
			c.WriteBulkString(n)
		} else {
			c.WriteNull()
		}
	case "SETINFO": // client libraries announce themselves
		c.WriteString("OK")
	case "ID":
		c.WriteInt(0)
	default:
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s'", quote(args[1])))
	}
}

// setName sets the connection's name (CLIENT SETNAME, HELLO SETNAME),
// checked before it is kept; it answers a refusal itself.
func setName(c redcon.Conn, name []byte) bool {
	if len(name) > maxClientName || bytes.ContainsAny(name, " \r\n") {
		c.WriteError(fmt.Sprintf("ERR Client names are at most %d bytes, without spaces or newlines", maxClientName))
		return false
	}
	sess(c).name = string(name)
	return true
}

func selectDB(_ *Server, c redcon.Conn, args [][]byte) {
	if string(args[1]) != "0" {
		c.WriteError("ERR DB index is out of range: frond has one database, 0")
		return
	}
	c.WriteString("OK")
}

// commandCmd answers COMMAND enough for redis-cli and client libraries:
// the command table with arities and flags; DOCS with the summaries.
func (s *Server) command(c redcon.Conn, args [][]byte) {
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(string(args[1]))
	}
	switch sub {
	case "COUNT":
		c.WriteInt(len(s.cmds))
	case "DOCS":
		c.WriteArray(2 * len(s.cmds))
		for _, name := range s.sortedNames() {
			c.WriteBulkString(name)
			c.WriteArray(2)
			c.WriteBulkString("summary")
			c.WriteBulkString(s.cmds[name].summary)
		}
	case "", "INFO":
		c.WriteArray(len(s.cmds))
		for _, name := range s.sortedNames() {
			cmd := s.cmds[name]
			arity := cmd.min
			if cmd.max != cmd.min {
				arity = -cmd.min
			}
			c.WriteArray(6)
			c.WriteBulkString(name)
			c.WriteInt(arity)
			c.WriteArray(len(cmd.flags))
			for _, f := range cmd.flags {
				c.WriteString(f)
			}
			first := 0
			if name == "incr" || name == "segment" || name == "ranges" {
				first = 1
			}
			c.WriteInt(first)
			c.WriteInt(first)
			c.WriteInt(first)
		}
	default:
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s'", quote(args[1])))
	}
}

func (s *Server) sortedNames() []string { return slices.Sorted(maps.Keys(s.cmds)) }

// configGet answers CONFIG GET name with name and an empty value: frond
// has no Redis parameters, and tools such as redis-benchmark ask for some
// (save, appendonly) before they start.
func configGet(_ *Server, c redcon.Conn, args [][]byte) {
	if !strings.EqualFold(string(args[1]), "get") {
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s'", quote(args[1])))
		return
	}
	c.WriteArray(2)
	c.WriteBulk(args[2])
	c.WriteBulkString("")
}
