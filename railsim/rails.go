package railsim

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/routing"
)

// DefaultRail is the rail the unprefixed routes (/v1/...) serve: the one
// rail of a simulator that is sent to as before there were rails, and
// the name paydispatch gives its own default rail.
const DefaultRail = routing.DefaultRail

// MaxRails bounds the rails one simulator keeps: a rail is made by its
// first send, so a stray client must not grow it without end.
const MaxRails = 256

// CodeCutoff is the refusal of an instruction received at or after its
// rail's cut-off for its value date: ISO 20022's "received after the
// cut-off time" (package rail classifies it Terminal).
const CodeCutoff = "TM01"

// Cutoff is a rail's daily cut-off: an instruction that arrives at or
// after TimeOfDay, as Zone's clocks read it, on its value date (or any
// later day) is refused with CodeCutoff.
type Cutoff struct {
	// TimeOfDay is the clock reading (e.g. 16h for 16:00:00; up to 24h);
	// zero: no cut-off.
	TimeOfDay time.Duration
	// Zone is where the clocks are (nil: UTC).
	Zone *time.Location
}

func (c Cutoff) validate() error {
	if c.TimeOfDay < 0 || c.TimeOfDay > 24*time.Hour || c.TimeOfDay%time.Second != 0 {
		return fmt.Errorf("cutoff: want a time of day from 00:00:01 to 24:00:00, whole seconds")
	}
	return nil
}

func (c Cutoff) zone() *time.Location {
	if c.Zone == nil {
		return time.UTC
	}
	return c.Zone
}

// at is the instant of the cut-off on valueDate; ok is false when there
// is none (no cut-off, or a date that is not one: such a body is refused
// as malformed anyway). The clock reading is taken as package calendar
// takes a rail's: the same instant paydispatch's relayer checks.
func (c Cutoff) at(valueDate string) (time.Time, bool) {
	if c.TimeOfDay == 0 {
		return time.Time{}, false
	}
	d, err := calendar.ParseDate(valueDate)
	if err != nil {
		return time.Time{}, false
	}
	return d.At(c.TimeOfDay, c.zone()), true
}

// RailSettings is a rail's configuration as GET and PUT /admin/rails
// speak it: {"cutoff":"16:00:00","timeZone":"Europe/Berlin"}. An empty
// cutoff is none; an empty zone is UTC.
type RailSettings struct {
	Name     string `json:"name,omitempty"`
	Cutoff   string `json:"cutoff"`
	TimeZone string `json:"timeZone"`
}

// ParseCutoff reads a cut-off from its settings' text: cutoff HH:MM or
// HH:MM:SS ("" : none), timeZone an IANA zone name ("": UTC).
func ParseCutoff(cutoff, timeZone string) (Cutoff, error) {
	var c Cutoff
	if cutoff != "" {
		d, err := routing.ParseTimeOfDay(cutoff)
		if err != nil || d == 0 {
			return Cutoff{}, fmt.Errorf("cutoff %q: want HH:MM:SS, from 00:00:01 to 24:00:00", plaintext.Clip(cutoff, 16))
		}
		c.TimeOfDay = d
	}
	if timeZone != "" {
		loc, err := routing.Rail{TimeZone: timeZone}.Location()
		if err != nil {
			return Cutoff{}, fmt.Errorf("timeZone %q: want an IANA time zone name, e.g. Europe/Berlin", plaintext.Clip(timeZone, 64))
		}
		c.Zone = loc
	}
	return c, nil
}

// ParseCutoffs reads the --cutoffs setting: NAME=HH:MM:SS[@Zone],
// comma-separated, e.g. "SEPA=16:00:00@Europe/Berlin,DEFAULT=17:30".
func ParseCutoffs(spec string) (map[string]Cutoff, error) {
	out := map[string]Cutoff{}
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	for _, item := range strings.Split(spec, ",") {
		name, rest, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || !routing.ValidName(name) {
			return nil, fmt.Errorf("%q: want NAME=HH:MM:SS[@Zone], NAME 1-64 letters, digits, '_', '.', ':' or '-'", plaintext.Clip(item, 80))
		}
		tod, zone, _ := strings.Cut(rest, "@")
		if tod == "" {
			return nil, fmt.Errorf("rail %s: want a cut-off HH:MM:SS after '='", name)
		}
		c, err := ParseCutoff(tod, zone)
		if err != nil {
			return nil, fmt.Errorf("rail %s: %w", name, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("rail %s: named twice", name)
		}
		out[name] = c
	}
	if len(out) > MaxRails {
		return nil, fmt.Errorf("%d rails: at most %d", len(out), MaxRails)
	}
	return out, nil
}

// settings writes c as RailSettings.
func (c Cutoff) settings(name string) RailSettings {
	rs := RailSettings{Name: name, TimeZone: c.zone().String()}
	if c.TimeOfDay != 0 {
		rs.Cutoff = routing.FormatTimeOfDay(c.TimeOfDay)
	}
	return rs
}

// simRail is one simulated rail: its ledger and its cut-off.
type simRail struct {
	name   string
	led    *ledger
	cutoff atomic.Pointer[Cutoff]
}

func (r *simRail) view(instructions bool) LedgerView {
	v := r.led.view()
	v.Rail = r.name
	if c := r.cutoff.Load(); c != nil && c.TimeOfDay != 0 {
		rs := c.settings("")
		v.Cutoff, v.TimeZone = rs.Cutoff, rs.TimeZone
	}
	if instructions {
		v.Instructions = r.led.receipts()
	}
	return v
}

// errTooManyRails: a new rail past MaxRails.
var errTooManyRails = fmt.Errorf("at most %d rails", MaxRails)

// errRailName: a name a rail cannot have.
var errRailName = errors.New("a rail's name is 1-64 letters, digits, '_', '.', ':' or '-'")

// rail returns the named rail, made when create is set and it is new.
func (s *Simulator) rail(name string, create bool) (*simRail, bool) {
	r, err := s.railOrErr(name, create)
	return r, err == nil && r != nil
}

func (s *Simulator) railOrErr(name string, create bool) (*simRail, error) {
	s.railsMu.RLock()
	r, ok := s.rails[name]
	s.railsMu.RUnlock()
	if ok || !create {
		return r, nil
	}
	if !routing.ValidName(name) {
		return nil, errRailName
	}
	s.railsMu.Lock()
	defer s.railsMu.Unlock()
	if r, ok := s.rails[name]; ok {
		return r, nil
	}
	if len(s.rails) >= MaxRails {
		return nil, errTooManyRails
	}
	prefix := "SIM"
	if name != DefaultRail {
		prefix = "SIM-" + name + "-"
	}
	r = &simRail{name: name, led: newLedger(prefix)}
	r.cutoff.Store(&Cutoff{})
	s.rails[name] = r
	return r, nil
}

// railList is every rail, by name.
func (s *Simulator) railList() []*simRail {
	s.railsMu.RLock()
	out := make([]*simRail, 0, len(s.rails))
	for _, r := range s.rails {
		out = append(out, r)
	}
	s.railsMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// SetCutoff sets the named rail's cut-off (a zero Cutoff: none), making
// the rail when it is new. Sends under way finish under the old one.
func (s *Simulator) SetCutoff(rail string, c Cutoff) error {
	if err := c.validate(); err != nil {
		return err
	}
	r, err := s.railOrErr(rail, true)
	if err != nil {
		return fmt.Errorf("rail %q: %w", plaintext.Clip(rail, 64), err)
	}
	r.cutoff.Store(&c)
	return nil
}

// Rails lists every rail's settings, by name.
func (s *Simulator) Rails() []RailSettings {
	rails := s.railList()
	out := make([]RailSettings, len(rails))
	for i, r := range rails {
		out[i] = r.cutoff.Load().settings(r.name)
	}
	return out
}
