"""The getting-started journey with emi.py against a live server, and its
retry logic against a local server. Run by `make test`
(TestSDKsRunTheGettingStartedJourneyAgainstALiveServer in web/docs):

    EMI_URL=... EMI_API_KEY=... EMI_API_SECRET=... python3 test_journey.py

The EMI_WEBHOOK_* variables carry a delivery signed by emi's deliverer;
without them the webhook step signs its own. Every step asserts; the
first failure exits non-zero.
"""
import http.server
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emi  # noqa: E402


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def step(name):
    print(f"step: {name}", flush=True)


def test_retries():
    """503 then 200 against a local server: retried with the same
    Idempotency-Key and a fresh signature, after Retry-After; a 400 is never
    retried; retries stop after max_retries."""
    seen = []
    script = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append((self.headers, body))
            status, headers, answer = script.pop(0) if script else (500, {}, {"code": 10000, "message": "unexpected"})
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(answer).encode())

        do_GET = do_PUT = do_POST  # noqa: N815

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = emi.Client(f"http://127.0.0.1:{server.server_address[1]}", "ak_test", "secret")
        waits = []
        client.sleep = waits.append
        unavailable = {"code": 10503, "message": "services.general.unavailable"}

        script[:] = [(503, {"Retry-After": "2"}, unavailable), (200, {}, {"code": 0, "data": {"token": "t1"}})]
        data = client.request("POST", "/v2/users", {"first_name": "Mara"}).data
        check(data == {"token": "t1"}, f"503 then 200 answered {data}")
        check(len(seen) == 2 and waits == [2.0], f"{len(seen)} attempts, waits {waits}")
        (h1, b1), (h2, b2) = seen
        check(h1["Idempotency-Key"] == h2["Idempotency-Key"] != "", "the retry changed the Idempotency-Key")
        check(h1["x-nonce"] != h2["x-nonce"] and h1["x-hash"] != h2["x-hash"], "the retry was not signed again")
        check(b1 == b2, "the retry changed the body")

        seen.clear()
        waits.clear()
        script[:] = [(503, {}, unavailable), (429, {}, {"code": 10029, "message": "services.general.rate_limited"}),
                     (200, {}, {"code": 0, "data": {}})]
        client.request("GET", "/v2/partner")
        check(len(seen) == 3 and len(waits) == 2, f"503, 429, 200: {len(seen)} attempts")
        check(0 <= waits[0] <= 0.5 and 0 <= waits[1] <= 1.0, f"backoff waits {waits} outside 0.5 s and 1 s")

        seen.clear()
        script[:] = [(400, {}, {"code": -3, "message": "service.users.validation",
                                "errors": [{"field": "email", "message": "is required"}]})]
        try:
            client.request("POST", "/v2/users", {})
            check(False, "a 400 did not raise")
        except emi.APIError as err:
            check(err.status == 400 and err.code == -3 and err.errors[0]["field"] == "email", str(err))
        check(len(seen) == 1, "a 400 was retried")

        seen.clear()
        script[:] = [(503, {"Retry-After": "0"}, unavailable)] * 4
        try:
            client.request("GET", "/v2/partner")
            check(False, "four 503 did not raise")
        except emi.APIError as err:
            check(err.status == 503 and err.code == 10503, str(err))
        check(len(seen) == 4, f"{len(seen)} attempts, want 1 + max_retries (3)")

        seen.clear()
        script[:] = [(503, {}, {"code": 10504, "message": "services.general.outcome_unknown"})]
        try:
            client.request("PUT", "/v2/cards/c1/status", {"status": "inactive"})
            check(False, "10504 did not raise")
        except emi.APIError as err:
            check(err.code == 10504, str(err))
        check(len(seen) == 1, "a PUT was retried after 10504 (outcome unknown)")
    finally:
        server.shutdown()
        server.server_close()

    # A network error (nothing listens) is retried for a GET, then raised.
    closed = emi.Client(f"http://127.0.0.1:{server.server_address[1]}", "k", "s", max_retries=2)
    closed.sleep = waits.append
    waits.clear()
    try:
        closed.request("GET", "/v2/partner")
        check(False, "a refused connection did not raise")
    except OSError:
        pass
    check(len(waits) == 2, f"a refused GET was retried {len(waits)} times, want 2")


def journey():
    client = emi.Client(os.environ["EMI_URL"], os.environ["EMI_API_KEY"], os.environ["EMI_API_SECRET"])

    step("partner_details, signature versions 2 and 1")
    merchant = client.partner()["merchant"]
    v1 = emi.Client(client.base_url, client.api_key, client.api_secret, signature_version=1)
    check(v1.partner()["merchant"] == merchant, "version 1 answered another partner")

    step("user_create")
    email = f"mara.{time.time_ns()}@example.com"
    user = client.create_user({"merchant": merchant, "email": email, "first_name": "Mara", "last_name": "Velikova",
                               "birthday": "1990-04-12", "nationality": "BG", "country": "BG"})
    check(len(user["token"]) == 36, f"user_create: {user}")

    step("aml_check of a clean name, then of a listed one")
    clear = client.aml_check({"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"})
    check(clear["status"] == "clear", f"clean name: {clear}")
    try:
        client.aml_check({"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"})
        check(False, "a listed name did not raise")
    except emi.APIError as err:
        check(err.code == 18001 and err.status == 409 and err.message == "service.aml.match.found", str(err))
        check(err.data["status"] == "match" and len(err.data["token"]) == 36, f"18001 carries {err.data}")

    step("account_create (two), card_create")
    acc1 = client.create_account({"program": "account_eur", "user": user["token"]})
    acc2 = client.create_account({"program": "account_eur", "user": user["token"], "alias": "savings"})
    check(len(acc1["balances"]) == 1, f"account_create: {acc1}")
    card = client.create_card({"account": acc1["token"], "type": "virtual"})
    check(card["status"] == "active" and card["account"] == acc1["token"], f"card_create: {card}")
    try:
        client.create_card({"account": acc1["token"], "type": "virtual"})
        check(False, "a second card did not raise")
    except emi.APIError as err:
        check(err.code == 12004 and err.status == 409, str(err))

    step("accounts_list, one per page")
    listed = sorted(a["token"] for a in client.list("/v2/accounts", limit=1, user=user["token"]))
    check(listed == sorted([acc1["token"], acc2["token"]]), f"two pages gave {listed}")

    step("the same POST twice with one Idempotency-Key")
    key = f"journey-{time.time_ns()}"
    body = {"merchant": merchant, "email": "twice." + email, "first_name": "Elin", "last_name": "Sandqvist"}
    first = client.request("POST", "/v2/users", body, idempotency_key=key)
    again = client.request("POST", "/v2/users", body, idempotency_key=key)
    check(first.data == again.data and not first.replayed and again.replayed, f"{first.data} then {again.data}")

    step("events after a cursor")
    client.set_card_status(card["token"], "inactive")
    client.set_card_status(card["token"], "active")
    events = list(client.list("/v2/events", limit=100))
    check(len(events) >= 2, f"{len(events)} events")
    oldest = events[-1]
    after = [e["id"] for e in client.list("/v2/events", limit=1, after=oldest["id"])]
    check(after == [e["id"] for e in reversed(events[:-1])], f"after {oldest['id']}: {after}")

    step("webhook verification")
    secret = os.environ.get("EMI_WEBHOOK_SECRET_NEW")
    if secret:
        secrets_ = [os.environ["EMI_WEBHOOK_SECRET_OLD"], secret]
        msg_id, ts = os.environ["EMI_WEBHOOK_ID"], int(os.environ["EMI_WEBHOOK_TIMESTAMP"])
        body = os.environ["EMI_WEBHOOK_BODY"].encode()
        signature = os.environ["EMI_WEBHOOK_SIGNATURE"]
    else:
        secret = "whsec_" + __import__("base64").b64encode(os.urandom(32)).decode()
        secrets_ = [secret]
        msg_id, ts, body = "msg_1", int(time.time()), b'{"id":"msg_1","type":"webhook.test","data":{}}'
        signature = emi.sign_webhook(secret, msg_id, ts, body)
    headers = {"Webhook-Id": msg_id, "Webhook-Timestamp": str(ts), "Webhook-Signature": signature}
    for s in secrets_:
        event = emi.verify_webhook(s, headers, body, now=ts + 10)
        check(event["id"] == msg_id, f"verified {event}")
    check(emi.sign_webhook(secrets_[-1], msg_id, ts, body) in signature.split(), "sign_webhook differs from emi's")
    for what, b, now in (("tampered", body.replace(b"}", b" }", 1), ts), ("6 minutes late", body, ts + 360)):
        try:
            emi.verify_webhook(secret, headers, b, now=now)
            check(False, f"a {what} delivery was verified")
        except emi.WebhookVerificationError:
            pass


if __name__ == "__main__":
    test_retries()
    print("retries: ok", flush=True)
    journey()
    print("journey: ok", flush=True)
