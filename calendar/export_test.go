package calendar

import "time"

// SetClock makes c read its clock from now, so tests age its entries
// instead of sleeping past a TTL.
func SetClock(c *Cache, now func() time.Time) { c.now = now }

// CacheLen is how many names c keeps.
func CacheLen(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
