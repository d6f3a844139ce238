package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// fakeDispatchConfigs keeps one item type's settings; it takes exec_mode
// and batch_size and refuses other values as the queue would.
type fakeDispatchConfigs struct{ c queue.Settings }

func newFakeDispatchConfigs() *fakeDispatchConfigs {
	c := queue.DefaultSettings("PAYMENT", "PaymentExecution", "payment-exec-task-queue")
	c.ExecMode, c.UpdatedAt = queue.ExecPerItem, time.Now()
	return &fakeDispatchConfigs{c: c}
}

func (f *fakeDispatchConfigs) ListConfigs(context.Context) ([]queue.Settings, error) {
	return []queue.Settings{f.c}, nil
}

func (f *fakeDispatchConfigs) GetConfig(_ context.Context, itemType string) (queue.Settings, error) {
	if itemType != f.c.ItemType {
		return queue.Settings{}, queue.ErrNotFound
	}
	return f.c, nil
}

func (f *fakeDispatchConfigs) UpdateConfigTx(_ context.Context, _ pgx.Tx, itemType string, changes map[string]string) (queue.Settings, error) {
	if itemType != f.c.ItemType {
		return queue.Settings{}, queue.ErrNotFound
	}
	next := f.c
	for k, v := range changes {
		switch k {
		case "exec_mode":
			if v != "BATCH" && v != "PER_ITEM" {
				return queue.Settings{}, &field.Invalid{What: "invalid setting", Kind: queue.ErrInvalidConfig,
					Fields: []field.Error{{Field: "exec_mode", Detail: strconv.Quote(v) + ": want PER_ITEM or BATCH"}}}
			}
			next.ExecMode = queue.ExecMode(v)
		case "batch_size":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return queue.Settings{}, &field.Invalid{What: "invalid setting", Kind: queue.ErrInvalidConfig,
					Fields: []field.Error{{Field: "batch_size", Detail: strconv.Quote(v) + ": want a whole number from 1 to 10000"}}}
			}
			next.BatchSize = n
		}
	}
	f.c = next
	return f.c, nil
}

// TestDispatchConfigAPI: an admin reads the settings and changes the
// execution mode at run time; a bad key or value is 422 naming it and
// changes nothing; an unknown item type is 404.
func TestDispatchConfigAPI(t *testing.T) {
	t.Parallel()
	f := newFakeDispatchConfigs()
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{DispatchConfigs: f, Audit: &fakeAudit{}}})
	tests := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"list", "GET", "/admin/dispatch/config", "", 200, ""},
		{"one", "GET", "/admin/dispatch/config/PAYMENT", "", 200, ""},
		{"unknown type", "GET", "/admin/dispatch/config/NOPE", "", 404, ""},
		{"to batch", "PATCH", "/admin/dispatch/config/PAYMENT", `{"exec_mode":"BATCH","batch_size":1000}`, 200, ""},
		{"bad mode", "PATCH", "/admin/dispatch/config/PAYMENT", `{"exec_mode":"FAST"}`, 422, "exec_mode"},
		{"unknown key", "PATCH", "/admin/dispatch/config/PAYMENT", `{"exec_mod":"BATCH"}`, 422, "exec_mod"},
		{"a float", "PATCH", "/admin/dispatch/config/PAYMENT", `{"batch_size":1.5}`, 422, "batch_size"},
		{"not an object", "PATCH", "/admin/dispatch/config/PAYMENT", `["exec_mode"]`, 400, ""},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Fatalf("%s: %d, want %d: %s", tt.name, rec.Code, tt.status, rec.Body)
		}
		if tt.field != "" {
			var p struct{ Errors []struct{ Field string } }
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || len(p.Errors) == 0 || p.Errors[0].Field != tt.field {
				t.Fatalf("%s: the problem does not name %s: %s", tt.name, tt.field, rec.Body)
			}
		}
	}
	if f.c.ExecMode != queue.ExecBatch || f.c.BatchSize != 1000 {
		t.Fatalf("the change was not made, or a refused one was: %s batch %d", f.c.ExecMode, f.c.BatchSize)
	}
}

// TestDispatchConfigProblemNamesTheSetting: a value the queue refuses is
// 422 problem+json whose errors name the setting, on the real queue.
func TestDispatchConfigProblemNamesTheSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q := queue.New(pool)
	if _, err := q.RegisterItemType(ctx, queue.DefaultSettings("INVOICE", "InvoiceExecution", "invoice-queue")); err != nil {
		t.Fatal(err)
	}
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{DispatchConfigs: q, Audit: audit.New(audit.Config{DB: pool})}})
	for _, tt := range []struct{ body, setting, detail string }{
		{`{"batch_size":0}`, "batch_size", `"0": want a whole number from 1 to 10000`},
		{`{"exec_mode":"FAST"}`, "exec_mode", `"FAST": want PER_ITEM or BATCH`},
		{`{"enabled":"maybe"}`, "enabled", `"maybe": want true or false`},
		{`{"exec_task_queue":" "}`, "exec_task_queue", "want a non-empty name"},
	} {
		req := httptest.NewRequest("PATCH", "/admin/dispatch/config/INVOICE", strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		var p httpapi.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 422 || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s: %d %s, want 422 problem+json", tt.body, rec.Code, rec.Body)
		}
		if len(p.Errors) != 1 || p.Errors[0].Field != tt.setting || p.Errors[0].Detail != tt.detail {
			t.Errorf("%s: errors %+v, want %s: %s", tt.body, p.Errors, tt.setting, tt.detail)
		}
	}
}
