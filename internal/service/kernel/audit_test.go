package kernel

import "testing"

func TestRedactHidesSensitiveKeysAtAnyDepth(t *testing.T) {
	in := map[string]any{
		"name":        "Acme",
		"api_secret":  "as_x",
		"pan":         "4111111111111111",
		"cvv":         "123",
		"new_pin":     "1234",
		"password":    "hunter2",
		"file":        "JVBERi0x",
		"spinner":     "kept", // contains "pin" but is not a pin field
		"pending":     "kept",
		"items":       []any{map[string]any{"webhook_secret": "whsec_x", "label": "ok"}, "plain"},
		"delivery":    map[string]any{"totp_code": "123456", "city": "Oslo"},
		"masked_pan":  "411111******1111",
		"description": "no secret here",
		"pin_by_sms":  map[string]any{"from": true, "to": false}, // a program setting, not a PIN
	}
	out := Redact(in)
	redacted := []string{"api_secret", "pan", "cvv", "new_pin", "password", "file", "masked_pan"}
	for _, k := range redacted {
		if out[k] != "[redacted]" {
			t.Errorf("%s = %v, want [redacted]", k, out[k])
		}
	}
	for _, k := range []string{"name", "spinner", "pending", "description"} {
		if out[k] != in[k] {
			t.Errorf("%s was changed to %v", k, out[k])
		}
	}
	if m, ok := out["pin_by_sms"].(map[string]any); !ok || m["to"] != false {
		t.Errorf("the PIN-by-SMS setting's change was hidden: %v", out["pin_by_sms"])
	}
	item := out["items"].([]any)[0].(map[string]any)
	if item["webhook_secret"] != "[redacted]" || item["label"] != "ok" {
		t.Errorf("nested list item: %v", item)
	}
	d := out["delivery"].(map[string]any)
	if d["totp_code"] != "[redacted]" || d["city"] != "Oslo" {
		t.Errorf("nested map: %v", d)
	}
	if in["pan"] != "4111111111111111" {
		t.Error("Redact changed its input")
	}
	if Redact(nil) != nil {
		t.Error("Redact(nil) != nil")
	}
}
