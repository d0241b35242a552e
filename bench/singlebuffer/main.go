// Command singlebuffer is the fault benchmark's reference (bench/faults): a
// small Leaf-like segment service with one buffer, as a service without
// prefetch is. It serves Leaf's API (GET /api/segment/get/{tag}, the next
// ID as text) from one segment held in memory, and only when that segment
// is used up does it take the next from the store, under its lock: every
// request behind it waits for the store, as in a hand-rolled
// "UPDATE ... SET max_id = max_id + step" service or a Leaf without its
// second buffer. Its step is fixed.
//
// Stores: mysql://user[:pass]@host:port/db and postgres://... (a row per
// tag in table singlebuffer_alloc, created when missing), redis://host:port
// (INCRBY of singlebuffer:{tag}). A store call is bounded by -timeout, as
// frond's segment.load_timeout bounds its own.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
)

// loader takes the next segment of a tag from the store: its last ID.
type loader func(ctx context.Context, tag string, step int64) (int64, error)

// buffer is one tag's segment.
type buffer struct {
	mu       sync.Mutex
	cur, end int64 // the last ID handed out and the segment's last
}

type service struct {
	load    loader
	step    int64
	timeout time.Duration
	mu      sync.Mutex
	tags    map[string]*buffer
}

func (s *service) next(ctx context.Context, tag string) (int64, error) {
	s.mu.Lock()
	b := s.tags[tag]
	if b == nil {
		b = &buffer{}
		s.tags[tag] = b
	}
	s.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur >= b.end { // used up: the store, now, with every request behind this one waiting
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		end, err := s.load(ctx, tag, s.step)
		cancel()
		if err != nil {
			return 0, err
		}
		b.cur, b.end = end-s.step, end
	}
	b.cur++
	return b.cur, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address")
	store := flag.String("store", "", "mysql://, postgres:// or redis:// URL")
	step := flag.Int64("step", 10000, "IDs a segment")
	timeout := flag.Duration("timeout", 10*time.Second, "bound on one store call")
	flag.Parse()
	load, err := open(*store)
	if err != nil {
		log.Fatalf("singlebuffer: %v", err)
	}
	s := &service{load: load, step: *step, timeout: *timeout, tags: map[string]*buffer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/segment/get/{tag}", func(w http.ResponseWriter, r *http.Request) {
		id, err := s.next(r.Context(), r.PathValue("tag"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var b [20]byte
		w.Write(strconv.AppendInt(b[:0], id, 10))
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func open(raw string) (loader, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "redis":
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return nil, err
		}
		c := redis.NewClient(opt)
		return func(ctx context.Context, tag string, step int64) (int64, error) {
			return c.IncrBy(ctx, "singlebuffer:"+tag, step).Result()
		}, nil
	case "mysql":
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, trimSlash(u.Path)
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return nil, err
		}
		return sqlLoader(db, "CREATE TABLE IF NOT EXISTS singlebuffer_alloc (tag VARCHAR(128) PRIMARY KEY, max_id BIGINT NOT NULL)",
			"INSERT IGNORE INTO singlebuffer_alloc (tag, max_id) VALUES (?, 0)",
			"UPDATE singlebuffer_alloc SET max_id = max_id + ? WHERE tag = ?",
			"SELECT max_id FROM singlebuffer_alloc WHERE tag = ?")
	case "postgres", "postgresql":
		db, err := sql.Open("pgx", raw)
		if err != nil {
			return nil, err
		}
		return sqlLoader(db, "CREATE TABLE IF NOT EXISTS singlebuffer_alloc (tag VARCHAR(128) PRIMARY KEY, max_id BIGINT NOT NULL)",
			"INSERT INTO singlebuffer_alloc (tag, max_id) VALUES ($1, 0) ON CONFLICT DO NOTHING",
			"UPDATE singlebuffer_alloc SET max_id = max_id + $1 WHERE tag = $2",
			"SELECT max_id FROM singlebuffer_alloc WHERE tag = $1")
	}
	return nil, fmt.Errorf("store %q: mysql://, postgres:// or redis://", raw)
}

func trimSlash(p string) string {
	if len(p) > 0 && p[0] == '/' {
		return p[1:]
	}
	return p
}

// sqlLoader takes a segment as Leaf does: the update and the read of the
// row in one transaction.
func sqlLoader(db *sql.DB, create, insert, update, read string) (loader, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, create); err != nil {
		return nil, err
	}
	return func(ctx context.Context, tag string, step int64) (int64, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, update, step, tag)
		if err != nil {
			return 0, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, insert, tag); err != nil {
				return 0, err
			}
			if _, err := tx.ExecContext(ctx, update, step, tag); err != nil {
				return 0, err
			}
		}
		var end int64
		if err := tx.QueryRowContext(ctx, read, tag).Scan(&end); err != nil {
			return 0, err
		}
		if end < step {
			return 0, errors.New("the row is below one step")
		}
		return end, tx.Commit()
	}, nil
}
