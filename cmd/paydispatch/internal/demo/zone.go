package demo

import (
	"fmt"
	"time"
)

// MiddayZone is a zone of the zone database with a whole-hour offset
// (Etc/GMT, Etc/GMT-14 to Etc/GMT+12) in which t falls between 12:00
// and 13:00: a rail set up in it has a cut-off minutes after t on the
// same business day, whatever the hour of the run. (Etc/GMT-5 is five
// hours ahead of UTC: the database's names invert the sign.)
func MiddayZone(t time.Time) string {
	h := t.UTC().Hour()
	for off := -12; off <= 14; off++ {
		if ((h+off)%24+24)%24 != 12 {
			continue
		}
		switch {
		case off == 0:
			return "Etc/GMT"
		case off > 0:
			return fmt.Sprintf("Etc/GMT-%d", off)
		default:
			return fmt.Sprintf("Etc/GMT+%d", -off)
		}
	}
	panic("unreachable: 27 offsets cover every hour")
}
