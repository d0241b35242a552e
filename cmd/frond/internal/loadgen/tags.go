package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// createStep is the step of the tags a run creates.
const createStep = 1000

// errTagExists is a create of a tag that is there: kept as it is.
func tagExists(err error) bool { return codeOf(err) == "tag_exists" }

// createTags creates the run's tags, Concurrency at a time.
func createTags(ctx context.Context, d driver, o Options) error {
	n := o.tagCount()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, o.Concurrency)
	for w := range o.Concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := d.create(ctx, o.TagName(i)); err != nil && !tagExists(err) {
					errs[w] = fmt.Errorf("create tag %s: %w", o.TagName(i), err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// serverSize reads the server's /metrics once: its size, how long it took,
// and the process's RSS in it.
func serverSize(ctx context.Context, o Options) *ServerSize {
	out := &ServerSize{URL: o.MetricsURL}
	c := &http.Client{Timeout: 30 * time.Second}
	if o.TLS != nil {
		c.Transport = &http.Transport{TLSClientConfig: o.TLS}
	}
	req, err := http.NewRequestWithContext(ctx, "GET", o.MetricsURL, nil)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		out.Error = resp.Status
		return out
	}
	cr := &countingReader{r: resp.Body}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			out.RSSBytes = int64(f)
		}
	}
	io.Copy(io.Discard, cr)
	out.MetricsSeconds = time.Since(t0).Seconds()
	out.MetricsBytes = cr.n
	if err := sc.Err(); err != nil {
		out.Error = err.Error()
	}
	return out
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
