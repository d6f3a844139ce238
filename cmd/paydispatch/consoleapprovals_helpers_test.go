package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// approvalsStack is serve run in this process for the console's approval
// tests: acme's account ACC-1, and acme's rule "big" asking one approval
// of a payment of 1,000.00 or more. It answers the server, its base URL
// and its data directory.
func approvalsStack(t *testing.T) (srv *runningServer, base, data string) {
	t.Helper()
	data = dataDir(t)
	srv = startServeInProcess(t, map[string]string{"PAYDISPATCH_DATA_DIR": data})
	base = "http://" + srv.addr
	openAccount(t, srv.addr, "ACC-1", "acme", "100000.00")
	var rules any
	if code := postJSON(t, base+"/admin/approval-rules", "application/json",
		`{"tenantId":"acme","rules":[{"name":"big","minAmount":"1000.00","approvals":1}]}`, &rules); code != http.StatusOK {
		t.Fatalf("the approval rule: %d %v", code, rules)
	}
	return srv, base, data
}

// createToken makes a token with paydispatch token create on data's
// database, and answers its secret and its id.
func createToken(t *testing.T, data, name string, args ...string) (secret, id string) {
	t.Helper()
	code, out, stderr := runCLI(append([]string{"token", "create", "--name", name}, args...),
		map[string]string{"PAYDISPATCH_DATA_DIR": data, "DATABASE_URL": ""})
	for line := range strings.Lines(stderr) {
		if rest, ok := strings.CutPrefix(line, "created "); ok {
			id, _, _ = strings.Cut(rest, " ")
		}
	}
	secret = strings.TrimSpace(out)
	if code != 0 || id == "" || secret == "" {
		t.Fatalf("token create %s: exit %d: %s", name, code, stderr)
	}
	return secret, id
}

// submitAcme sends acme's payment id of amount from ACC-1, due at at,
// with token, and wants it taken in.
func submitAcme(t *testing.T, base, token, id, amount, at string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/payments", strings.NewReader(fmt.Sprintf(`{"paymentId":%q,"tenantId":"acme",`+
		`"debtorAccount":"ACC-1","amount":%q,"currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},`+
		`"requestedExecutionTime":%q}`, id, amount, at)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("payment %s: %d", id, resp.StatusCode)
	}
}
