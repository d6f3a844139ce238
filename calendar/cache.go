package calendar

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultCacheTTL is how long a Cache trusts what it read, as pacing's
// config cache does: a change reaches every process within it.
const DefaultCacheTTL = 5 * time.Second

// CacheConfig configures a Cache; zero values take the defaults.
type CacheConfig struct {
	// TTL is how long a calendar read (or its absence) is trusted
	// (default DefaultCacheTTL).
	TTL time.Duration
}

// Cache reads calendars through to the database at most once per TTL per
// name, for hot paths that look a calendar up for every chunk of
// payments. Built-ins never reach the database. A calendar it returns is
// shared with other callers: read it, do not change it. Safe for
// concurrent use.
type Cache struct {
	db  DBTX
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	c   Calendar
	err error // ErrNotFound, wrapped: absence is cached too
	at  time.Time
}

// NewCache is a cache of the calendars on db (a pool: it outlives any
// transaction).
func NewCache(db DBTX, cfg CacheConfig) *Cache {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultCacheTTL
	}
	return &Cache{db: db, ttl: cfg.TTL, now: time.Now, entries: map[string]cacheEntry{}}
}

// Get is Get(ctx, db, name) as read at most TTL ago. A database error is
// returned and not cached.
func (c *Cache) Get(ctx context.Context, name string) (Calendar, error) {
	if b, ok := BuiltIn(name); ok {
		return b, nil
	}
	c.mu.Lock()
	e, ok := c.entries[name]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.c, e.err
	}
	cal, err := Get(ctx, c.db, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Calendar{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= maxCacheEntries {
		// Names asked for that do not exist are cached too; dropping the
		// expired keeps a caller passing names from outside from growing
		// the map without end.
		for n, e := range c.entries {
			if now.Sub(e.at) >= c.ttl {
				delete(c.entries, n)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			clear(c.entries)
		}
	}
	c.entries[name] = cacheEntry{c: cal, err: err, at: now}
	return cal, err
}

// maxCacheEntries bounds a Cache's names; operators define a handful of
// calendars.
const maxCacheEntries = 1024

// Forget drops name, so that this process reads it again next time (after
// a Put made here). Other processes see the change within TTL.
func (c *Cache) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, name)
}

// Flush drops every calendar.
func (c *Cache) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}
