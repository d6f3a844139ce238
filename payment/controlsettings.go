package payment

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// DuplicateAction is what a tenant's suspected duplicates get (the
// duplicate control, DuplicateControl).
type DuplicateAction string

const (
	// DuplicateWarn lets it go on, its status reason naming the earlier
	// payment.
	DuplicateWarn DuplicateAction = "WARN"
	// DuplicateHold stops it HELD ("DUPLICATE: like <id>") until an
	// operator releases or cancels it.
	DuplicateHold DuplicateAction = "HOLD"
	// DuplicateReject ends it REJECTED, naming the earlier payment.
	DuplicateReject DuplicateAction = "REJECT"
	// DuplicateOff checks nothing: its payments are neither matched nor
	// remembered.
	DuplicateOff DuplicateAction = "OFF"
)

// ScreeningOnError is what the screening control does with a tenant's
// payment when the screening service cannot answer.
type ScreeningOnError string

const (
	ScreeningHold   ScreeningOnError = "HOLD"
	ScreeningReject ScreeningOnError = "REJECT"
	ScreeningAllow  ScreeningOnError = "ALLOW"
)

// The bounds of a duplicate window: a day, so that a payroll sent again
// the next morning is caught, to a quarter, beyond which two equal
// payments are a recurring one more than a mistake.
const (
	MinDuplicateWindowDays = 1
	MaxDuplicateWindowDays = 90
)

// DefaultControlSettings are a tenant's settings until some are set.
// Duplicates are WARNed by default, not held: a tenant's recurring
// equal payments (and the bench and demo, which send many alike) keep
// flowing until its operator chooses HOLD or REJECT; the warning names
// the earlier payment in the status and the 202 either way. A screening
// service that cannot answer holds: nothing unscreened leaves unless the
// tenant's operator says ALLOW.
var DefaultControlSettings = ControlSettings{
	DuplicateAction:     DuplicateWarn,
	DuplicateWindowDays: 7,
	ScreeningOnError:    ScreeningHold,
}

// ControlSettings are what a tenant's controls of Phase A do.
type ControlSettings struct {
	TenantID            string
	DuplicateAction     DuplicateAction
	DuplicateWindowDays int
	ScreeningOnError    ScreeningOnError
	// UpdatedAt: when they were last set (zero: the defaults, never set).
	UpdatedAt time.Time
}

// DuplicateWindow is the window as a duration.
func (s ControlSettings) DuplicateWindow() time.Duration {
	return time.Duration(s.DuplicateWindowDays) * 24 * time.Hour
}

// ControlSettingsChange is a change of a tenant's settings: the fields
// given are set, the others kept (or their defaults, for a tenant that
// had none).
type ControlSettingsChange struct {
	TenantID            string
	DuplicateAction     *string
	DuplicateWindowDays *int
	ScreeningOnError    *string
}

// Validate checks the change, naming each bad field by its JSON name;
// the actions are read in any case and stored upper case.
func (c *ControlSettingsChange) Validate() error {
	bad := &field.Invalid{What: "invalid control settings"}
	if !field.ValidID(c.TenantID) {
		bad.Add("tenantId", "required, the tenant whose settings they are: "+field.IDRule)
	}
	if c.DuplicateAction != nil {
		a := strings.ToUpper(*c.DuplicateAction)
		switch DuplicateAction(a) {
		case DuplicateWarn, DuplicateHold, DuplicateReject, DuplicateOff:
			c.DuplicateAction = &a
		default:
			bad.Add("duplicateAction", "want WARN, HOLD, REJECT or OFF")
		}
	}
	if d := c.DuplicateWindowDays; d != nil && (*d < MinDuplicateWindowDays || *d > MaxDuplicateWindowDays) {
		bad.Add("duplicateWindowDays", fmt.Sprintf("want a whole number of days from %d to %d", MinDuplicateWindowDays, MaxDuplicateWindowDays))
	}
	if c.ScreeningOnError != nil {
		s := strings.ToUpper(*c.ScreeningOnError)
		switch ScreeningOnError(s) {
		case ScreeningHold, ScreeningReject, ScreeningAllow:
			c.ScreeningOnError = &s
		default:
			bad.Add("screeningOnError", "want HOLD, REJECT or ALLOW")
		}
	}
	if c.DuplicateAction == nil && c.DuplicateWindowDays == nil && c.ScreeningOnError == nil && len(bad.Fields) == 0 {
		bad.Add("duplicateAction", "nothing to set: give duplicateAction, duplicateWindowDays or screeningOnError")
	}
	return bad.Err()
}

// SetControlSettings changes a tenant's settings on db (the caller's
// transaction, with its audit entry) and answers them as stored. They
// apply to the payments Phase A takes in from then on.
func SetControlSettings(ctx context.Context, db dbsqlc.DBTX, c ControlSettingsChange) (ControlSettings, error) {
	if err := c.Validate(); err != nil {
		return ControlSettings{}, err
	}
	p := dbsqlc.SetControlSettingsParams{
		TenantID:                   c.TenantID,
		DuplicateAction:            c.DuplicateAction,
		DefaultDuplicateAction:     string(DefaultControlSettings.DuplicateAction),
		DefaultDuplicateWindowDays: int32(DefaultControlSettings.DuplicateWindowDays),
		ScreeningOnError:           c.ScreeningOnError,
		DefaultScreeningOnError:    string(DefaultControlSettings.ScreeningOnError),
	}
	if c.DuplicateWindowDays != nil {
		d := int32(*c.DuplicateWindowDays)
		p.DuplicateWindowDays = &d
	}
	row, err := dbsqlc.New(db).SetControlSettings(ctx, p)
	if err != nil {
		return ControlSettings{}, fmt.Errorf("payment: tenant %s's control settings: %w", c.TenantID, err)
	}
	return controlSettingsOf(row), nil
}

// ListControlSettings is every tenant's settings that were set, by
// tenant (the others have DefaultControlSettings).
func ListControlSettings(ctx context.Context, db dbsqlc.DBTX) ([]ControlSettings, error) {
	rows, err := dbsqlc.New(db).ListControlSettings(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: list control settings: %w", err)
	}
	out := make([]ControlSettings, len(rows))
	for i, r := range rows {
		out[i] = controlSettingsOf(r)
	}
	return out, nil
}

// ControlSettings are the tenants' settings, each tenant's own or the
// defaults, in one query.
func (s *Store) ControlSettings(ctx context.Context, tenants []string) (map[string]ControlSettings, error) {
	rows, err := s.q.ControlSettingsOf(ctx, tenants)
	if err != nil {
		return nil, fmt.Errorf("payment: control settings of %d tenants: %w", len(tenants), err)
	}
	out := make(map[string]ControlSettings, len(tenants))
	for _, t := range tenants {
		d := DefaultControlSettings
		d.TenantID = t
		out[t] = d
	}
	for _, r := range rows {
		out[r.TenantID] = controlSettingsOf(r)
	}
	return out, nil
}

// ScreeningOnError is what the tenant's screening does when its service
// cannot answer: HOLD, REJECT or ALLOW (HOLD until set).
func (s *Store) ScreeningOnError(ctx context.Context, tenant string) (ScreeningOnError, error) {
	all, err := s.ControlSettings(ctx, []string{tenant})
	if err != nil {
		return "", err
	}
	return all[tenant].ScreeningOnError, nil
}

func controlSettingsOf(r dbsqlc.TenantControlSetting) ControlSettings {
	return ControlSettings{TenantID: r.TenantID, DuplicateAction: DuplicateAction(r.DuplicateAction),
		DuplicateWindowDays: int(r.DuplicateWindowDays), ScreeningOnError: ScreeningOnError(r.ScreeningOnError), UpdatedAt: r.UpdatedAt}
}
