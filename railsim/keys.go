package railsim

import "github.com/google/uuid"

// keyed holds the ledger's entries by idempotency key. paydispatch's
// keys are payment ids, UUIDs in their canonical text: those are kept as
// their 16 bytes (a 100,000-payment drain's rail holds 100,000 of them,
// in the drain's own process), any other key as its string.
type keyed struct {
	ids   map[uuid.UUID]entry
	other map[string]entry
}

func newKeyed() keyed {
	return keyed{ids: make(map[uuid.UUID]entry), other: make(map[string]entry)}
}

// canonicalID is key's UUID when key is one in canonical form (lower-case
// hex, hyphenated), the only text that maps back to the same key.
func canonicalID(key string) (uuid.UUID, bool) {
	if len(key) != 36 {
		return uuid.UUID{}, false
	}
	for i := range len(key) {
		c := key[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return uuid.UUID{}, false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return uuid.UUID{}, false
			}
		}
	}
	id, err := uuid.Parse(key)
	return id, err == nil
}

func (k keyed) get(key string) (entry, bool) {
	if id, ok := canonicalID(key); ok {
		e, ok := k.ids[id]
		return e, ok
	}
	e, ok := k.other[key]
	return e, ok
}

func (k keyed) put(key string, e entry) {
	if id, ok := canonicalID(key); ok {
		k.ids[id] = e
		return
	}
	k.other[key] = e
}

func (k keyed) remove(key string) {
	if id, ok := canonicalID(key); ok {
		delete(k.ids, id)
		return
	}
	delete(k.other, key)
}

func (k keyed) len() int { return len(k.ids) + len(k.other) }

// each calls f for every key and its entry.
func (k keyed) each(f func(key string, e entry)) {
	for id, e := range k.ids {
		f(id.String(), e)
	}
	for key, e := range k.other {
		f(key, e)
	}
}
