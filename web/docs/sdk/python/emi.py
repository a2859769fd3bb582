"""A small client for the emi partner API: Python 3.9 or later, standard
library only. One file: copy it beside your code (download it from
/docs/sdk/python/emi.py on the server you use); it is not on PyPI.

What it does for you:

- signs every request with signature version 2 (method, path, query, a
  fresh x-nonce and the body as sent); ``signature_version=1`` is available;
- sends an Idempotency-Key (a random UUID unless you give one) with every
  POST, and keeps it across retries;
- retries network errors (GET and POST only), 429 and 503 with exponential
  backoff and jitter, honouring Retry-After, signing each attempt again;
  never any other 4xx;
- raises ``APIError`` for every error answer, with the envelope's code,
  message key, description, errors list, data and the HTTP status;
- iterates over lists page by page, or after a cursor (events);
- verifies webhook signatures (Standard Webhooks).

    import emi
    client = emi.Client(os.environ["EMI_URL"], os.environ["EMI_API_KEY"], os.environ["EMI_API_SECRET"])
    user = client.create_user({"merchant": merchant, "email": "mara@example.com",
                               "first_name": "Mara", "last_name": "Velikova"})
    account = client.create_account({"program": "account_eur", "user": user["token"]})
"""

import base64
import binascii
import hashlib
import hmac
import json
import random
import secrets
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from email.utils import parsedate_to_datetime

VERSION = "1.0.0"

# The API's operations: method, path pattern and the operation name a
# request is signed with. A route missing here can be called with
# request(..., operation="name").
ROUTES = [
    ("POST", "/v1/aml", "aml_check"),
    ("POST", "/v1/kyc", "kyc_init"),
    ("POST", "/v1/sandbox/aml/{aml}", "sandbox_aml_review"),
    ("POST", "/v1/sandbox/kyc/{user}", "sandbox_kyc_decide"),
    ("GET", "/v2/partner", "partner_details"),
    ("GET", "/v2/events/{page}/{limit}", "events_list"),
    ("GET", "/v2/webhooks", "webhook_endpoints_list"),
    ("POST", "/v2/webhooks", "webhook_endpoint_create"),
    ("POST", "/v2/webhooks/{endpoint}/rotate", "webhook_endpoint_rotate_secret"),
    ("POST", "/v2/webhooks/{endpoint}/test", "webhook_endpoint_test"),
    ("POST", "/v2/webhooks/{endpoint}/delete", "webhook_endpoint_delete"),
    ("POST", "/v2/webhooks/{endpoint}/replay", "webhook_delivery_replay"),
    ("POST", "/v2/users", "user_create"),
    ("GET", "/v2/users/{user}", "user_details"),
    ("PUT", "/v2/users/{user}", "user_update"),
    ("DELETE", "/v2/users/{user}", "user_remove"),
    ("POST", "/v2/accounts", "account_create"),
    ("GET", "/v2/accounts/{account}", "account_details"),
    ("PUT", "/v2/accounts/{account}/status", "account_status"),
    ("DELETE", "/v2/accounts/{account}", "account_terminate"),
    ("GET", "/v2/accounts/{page}/{limit}", "accounts_list"),
    ("GET", "/v2/accounts/{account}/transactions/{page}/{limit}", "account_transactions"),
    ("POST", "/v2/cards", "card_create"),
    ("GET", "/v2/cards/{card}", "card_details"),
    ("DELETE", "/v2/cards/{card}", "card_terminate"),
    ("PUT", "/v2/cards/{card}/convert", "card_convert"),
    ("PUT", "/v2/cards/{card}/activate", "card_activate"),
    ("PUT", "/v2/cards/{card}/status", "card_status"),
    ("PUT", "/v2/cards/{card}/assign", "card_assign"),
    ("PUT", "/v2/cards/{card}/groups", "card_groups"),
    ("GET", "/v2/cards/{card}/pin", "card_retrieve_pin"),
    ("POST", "/v2/cards/{card}/pin/send", "card_send_pin"),
    ("DELETE", "/v2/cards/{card}/pin/reset", "card_reset_pin"),
    ("POST", "/v2/cards/{card}/3ds", "card_3ds_enrol"),
    ("PUT", "/v2/cards/{card}/3ds", "card_3ds_update"),
    ("DELETE", "/v2/cards/{card}/3ds", "card_3ds_remove"),
    ("GET", "/v2/cards/{card}/first-half", "card_number"),
    ("GET", "/v2/cards/{card}/second-half", "card_number"),
    ("POST", "/v2/cards/{card}/wallets", "card_wallet_provision"),
    ("GET", "/v2/cards/{page}/{limit}", "cards_list"),
    ("GET", "/v2/cards/{card}/authorizations/{page}/{limit}", "card_authorizations"),
    ("POST", "/v2/transfers", "transfer_create"),
    ("GET", "/v2/transfers/{transfer}", "transfer_details"),
    ("POST", "/v2/transfers/external", "transfer_external_create"),
    ("GET", "/v2/information_requests", "information_requests_list"),
    ("GET", "/v2/information_requests/{information_request}", "information_request_details"),
    ("POST", "/v2/information_requests/{information_request}/answer", "information_request_answer"),
    ("POST", "/v2/sandbox/cards/{card}/authorizations", "sandbox_card_authorize"),
    ("POST", "/v2/sandbox/authorizations/{authorization}/clear", "sandbox_authorization_clear"),
    ("POST", "/v2/sandbox/authorizations/{authorization}/reverse", "sandbox_authorization_reverse"),
    ("POST", "/v2/sandbox/transfers/{transfer}/complete", "sandbox_transfer_complete"),
    ("POST", "/v2/sandbox/transfers/{transfer}/return", "sandbox_transfer_return"),
    ("POST", "/v2/sandbox/transfers/{transfer}/review", "sandbox_transfer_review"),
    ("POST", "/v2/sandbox/incoming", "sandbox_incoming_credit"),
    ("GET", "/v2/webhooks/{endpoint}", "webhook_endpoint_details"),
    ("GET", "/v2/transfers", "transfers_list"),
    ("POST", "/v2/sandbox/events", "sandbox_event_trigger"),
    ("POST", "/v2/sandbox/reset", "sandbox_reset"),
    ("POST", "/v2/sandbox/test_clock", "sandbox_test_clock_create"),
    ("GET", "/v2/sandbox/test_clock", "sandbox_test_clock_details"),
    ("DELETE", "/v2/sandbox/test_clock", "sandbox_test_clock_delete"),
    ("POST", "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance"),
    ("PUT", "/v2/webhooks/{endpoint}", "webhook_endpoint_update"),
    ("DELETE", "/v2/webhooks/{endpoint}", "webhook_endpoint_delete"),
    ("POST", "/v2/webhooks/{endpoint}/disable", "webhook_endpoint_disable"),
    ("POST", "/v2/webhooks/{endpoint}/enable", "webhook_endpoint_enable"),
    ("POST", "/v3/applications", "application_create"),
    ("GET", "/v3/applications/{application}", "application_details"),
    ("PUT", "/v3/applications/{application}/companies", "company_update"),
    ("POST", "/v3/applications/{application}/companies/documents", "company_add_document"),
    ("POST", "/v3/applications/{application}/companies/members", "company_add_member"),
    ("PUT", "/v3/applications/{application}/companies/members/{token}", "company_member_update"),
    ("POST", "/v3/applications/{application}/companies/members/{token}/documents", "company_member_add_document"),
    ("POST", "/v3/sandbox/applications/{application}/decision", "sandbox_application_decide"),
]


def operation(method, path):
    """The signed operation name of method and path (its query ignored), or
    None. A literal segment wins over a parameter: /v2/cards/{card}/pin
    before /v2/cards/{page}/{limit}."""
    segs = path.split("?", 1)[0].strip("/").split("/")
    best, best_score = None, -1
    for m, pattern, op in ROUTES:
        pat = pattern.strip("/").split("/")
        if m != method.upper() or len(pat) != len(segs):
            continue
        score = 0
        for p, s in zip(pat, segs):
            if p.startswith("{") and s:
                continue
            if p != s:
                score = -1
                break
            score += 1
        if score > best_score:
            best, best_score = op, score
    return best


_operation_for = operation


class APIError(Exception):
    """An error answer of the API. ``code`` is the envelope's code (18001,
    10001, ...), ``message`` its dotted key, ``status`` the HTTP status,
    ``errors`` the list of {field, message}, ``data`` the data an error may
    carry (an AML match, 18001, carries the check). An answer that is not
    the API's envelope (a proxy's page) has code 0 and message ''."""

    def __init__(self, status, code, message, description="", doc_url="", errors=None, data=None,
                 request_id="", retry_after=None):
        self.status, self.code, self.message = status, code, message
        self.description, self.doc_url = description, doc_url
        self.errors = errors or []
        self.data = data
        self.request_id = request_id
        self.retry_after = retry_after
        text = f"HTTP {status}, code {code} {message}"
        for e in self.errors:
            text += f"; {e.get('field')}: {e.get('message')}"
        if description:
            text += f" ({description})"
        super().__init__(text)


class Response:
    """A successful answer: ``data``, ``status``, ``headers``, ``replayed``
    (the stored answer of an earlier request with the same Idempotency-Key)
    and ``idempotency_key`` (POST)."""

    def __init__(self, status, headers, data, idempotency_key):
        self.status, self.headers, self.data = status, headers, data
        self.replayed = headers.get("Idempotent-Replayed") == "true"
        self.idempotency_key = idempotency_key


class _NetworkError(Exception):
    pass


def sign_v1(secret, api_key, timestamp, op, method, body):
    """x-hash of signature version 1: the body (POST and PUT only) without
    its space, tab, CR and LF bytes."""
    signed = bytes(c for c in body if c not in b" \t\r\n") if method in ("POST", "PUT") else b""
    return hmac.new(secret.encode(), (api_key + timestamp + op).encode() + signed, hashlib.sha256).hexdigest()


def sign_v2(secret, api_key, timestamp, op, method, target, nonce, body):
    """x-hash of signature version 2: api_key + timestamp + operation +
    METHOD + request target (path and query as sent) + nonce + the body as
    sent."""
    message = (api_key + timestamp + op + method.upper() + target + nonce).encode() + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


class Client:
    """Calls the API. ``max_retries`` retries follow the first attempt; the
    wait before retry n is random up to min(backoff_max, backoff_base * 2**n)
    seconds, or Retry-After when the answer has one (one longer than
    max_retry_after is raised at once)."""

    def __init__(self, base_url, api_key, api_secret, *, signature_version=2, max_retries=3, timeout=30.0,
                 backoff_base=0.5, backoff_max=8.0, max_retry_after=60.0):
        self.base_url = base_url.rstrip("/")
        self.api_key, self.api_secret = api_key, api_secret
        if signature_version not in (1, 2):
            raise ValueError("signature_version is 1 or 2")
        self.signature_version = signature_version
        self.max_retries, self.timeout = max_retries, timeout
        self.backoff_base, self.backoff_max, self.max_retry_after = backoff_base, backoff_max, max_retry_after
        self.sleep = time.sleep  # tests replace it
        self.now = time.time

    def request(self, method, path, body=None, *, idempotency_key=None, operation=None, headers=None):
        """Send one call; return its ``Response`` or raise ``APIError``.
        ``body`` is None, bytes (sent as they are) or a value json.dumps
        encodes; ``path`` starts with the version and may carry a query."""
        method = method.upper()
        raw = None
        if body is not None:
            raw = body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode()
        op = operation or _operation_for(method, path)
        if not op:
            raise ValueError(f"no operation known for {method} {path}: pass operation=")
        key = idempotency_key or (str(uuid.uuid4()) if method == "POST" else None)
        attempt = 0
        while True:
            try:
                return self._once(method, path, op, raw, key, headers or {})
            except (APIError, _NetworkError) as err:
                wait = self._retry_wait(method, err, attempt)
                if wait is None:
                    if isinstance(err, _NetworkError):
                        raise err.__cause__ from None
                    raise
            self.sleep(wait)
            attempt += 1

    def _once(self, method, path, op, body, key, extra):
        ts = str(int(self.now()))
        target = urllib.parse.urlsplit(self.base_url + path)
        request_target = target.path + ("?" + target.query if target.query else "")
        headers = dict(extra)
        headers.update({"User-Agent": "emi-python/" + VERSION, "Accept": "application/json",
                        "x-api-key": self.api_key, "x-timestamp": ts})
        if body is not None:
            headers["Content-Type"] = "application/json"
        if key:
            headers["Idempotency-Key"] = key
        if self.signature_version == 1:
            headers["x-hash"] = sign_v1(self.api_secret, self.api_key, ts, op, method, body or b"")
        else:
            nonce = secrets.token_hex(8)
            headers.update({"x-signature-version": "2", "x-nonce": nonce,
                            "x-hash": sign_v2(self.api_secret, self.api_key, ts, op, method, request_target,
                                              nonce, body or b"")})
        req = urllib.request.Request(self.base_url + path, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:  # noqa: S310 (the caller's URL)
                status, res_headers, raw = res.status, res.headers, res.read()
        except urllib.error.HTTPError as err:  # 4xx and 5xx carry the envelope too
            status, res_headers, raw = err.code, err.headers, err.read()
        except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError) as err:
            raise _NetworkError(str(err)) from err
        retry_after = _retry_after(res_headers.get("Retry-After"))
        request_id = res_headers.get("x-request-id", "")
        try:
            env = json.loads(raw)
            code = env["code"]
        except (ValueError, KeyError, TypeError):
            raise APIError(status, 0, "", raw[:200].decode("utf-8", "replace").strip(),
                           request_id=request_id, retry_after=retry_after) from None
        if code != 0 or status >= 300:
            raise APIError(status, code, env.get("message", ""), env.get("description", ""), env.get("doc_url", ""),
                           env.get("errors"), env.get("data"), request_id, retry_after)
        return Response(status, res_headers, env.get("data"), key)

    def _retry_wait(self, method, err, attempt):
        """Seconds to wait before retrying, or None: network errors for GET
        and POST (a POST carries its Idempotency-Key), 429 and 503 for every
        method (nothing was done), except 10504 ("outcome unknown") where
        only a POST is retried."""
        if attempt >= self.max_retries:
            return None
        if isinstance(err, _NetworkError):
            return self._backoff(attempt) if method in ("GET", "POST") else None
        if err.status not in (429, 503) or (err.code == 10504 and method != "POST"):
            return None
        if err.retry_after is not None:
            return err.retry_after if err.retry_after <= self.max_retry_after else None
        return self._backoff(attempt)

    def _backoff(self, attempt):
        return random.uniform(0, min(self.backoff_max, self.backoff_base * (2 ** attempt)))

    def _object(self, method, path, body=None, idempotency_key=None):
        return self.request(method, path, body, idempotency_key=idempotency_key).data

    # Helpers for the getting-started journey; each returns the answer's data.

    def partner(self):
        """partner_details: whom the credentials belong to (``merchant`` is
        the master merchant token for users and applications)."""
        return self._object("GET", "/v2/partner")

    def create_user(self, user, idempotency_key=None):
        """user_create."""
        return self._object("POST", "/v2/users", user, idempotency_key)

    def aml_check(self, person, idempotency_key=None):
        """aml_check (first_name, last_name, nationality, birthday). A match
        raises APIError code 18001 whose ``data`` is the check."""
        return self._object("POST", "/v1/aml", person, idempotency_key)

    def create_account(self, account, idempotency_key=None):
        """account_create (program, and user or merchant)."""
        return self._object("POST", "/v2/accounts", account, idempotency_key)

    def create_card(self, card, idempotency_key=None):
        """card_create (account and type "virtual", say)."""
        return self._object("POST", "/v2/cards", card, idempotency_key)

    def set_card_status(self, card, status):
        """card_status ("active" or "inactive")."""
        return self._object("PUT", f"/v2/cards/{urllib.parse.quote(card, safe='')}/status", {"status": status})

    def list(self, path, *, limit=10, after=None, **filters):
        """Iterate over a list given without its /{page}/{limit}
        ("/v2/accounts", "/v2/events"). With ``after`` (the id of the last
        item you processed: events_list's cursor) it follows the cursor,
        oldest first, until none is left; without it, it reads pages 1, 2,
        ... (newest first) until ``total`` is reached. ``filters`` become
        the query (user=..., program=..., type=...)."""
        seen, page = 0, 1
        while True:
            query = dict(filters)
            if after:
                query["after"] = after
            target = f"{path.rstrip('/')}/{1 if after else page}/{limit}"
            if query:
                target += "?" + urllib.parse.urlencode(query)
            data = self.request("GET", target).data or {}
            items = data.get("items") or []
            yield from items
            seen += len(items)
            if not items or len(items) < limit:
                return
            if after:
                last = items[-1]
                after = last.get("id") or last.get("token")
                if not after:
                    return
            else:
                if seen >= data.get("total", 0):
                    return
                page += 1


def _retry_after(value):
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


class WebhookVerificationError(Exception):
    """A webhook delivery that must be refused (answer 400)."""


DEFAULT_WEBHOOK_TOLERANCE = 300  # seconds, either direction


def _webhook_key(secret):
    try:
        key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise ValueError("the webhook secret is not whsec_ followed by base64")
    return key


def _webhook_mac(key, msg_id, timestamp, body):
    return hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()


def sign_webhook(secret, msg_id, timestamp, body):
    """The webhook-signature value emi sends for a delivery (one secret):
    for tests of your receiver."""
    return "v1," + base64.b64encode(_webhook_mac(_webhook_key(secret), msg_id, int(timestamp), body)).decode()


def verify_webhook(secret, headers, body, *, tolerance=DEFAULT_WEBHOOK_TOLERANCE, now=None):
    """Check a delivery as the Standard Webhooks specification says and
    return the event. ``headers`` is a mapping (any case of the names);
    ``body`` the raw bytes as received, before any JSON parsing.
    webhook-signature holds one or more "v1,<base64>" signatures (two while
    a secret is rotated) of webhook-id + "." + webhook-timestamp + "." +
    body, HMAC-SHA256 keyed with the base64 after "whsec_"; one must match
    (compared in constant time) and the timestamp must be within tolerance
    seconds of now. Raises WebhookVerificationError otherwise."""
    key = _webhook_key(secret)
    lower = {k.lower(): v for k, v in dict(headers).items()}
    msg_id, ts, sigs = lower.get("webhook-id"), lower.get("webhook-timestamp"), lower.get("webhook-signature")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("webhook-id, webhook-timestamp and webhook-signature are required")
    try:
        sent = int(ts)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not UNIX seconds") from None
    now = time.time() if now is None else now
    if abs(now - sent) > tolerance:
        raise WebhookVerificationError(f"webhook-timestamp is {int(now - sent)} s away from now")
    if isinstance(body, str):
        body = body.encode()
    want = _webhook_mac(key, msg_id, ts, body)
    for sig in sigs.split():
        version, _, b64 = sig.partition(",")
        if version != "v1":
            continue
        try:
            got = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(got, want):
            try:
                return json.loads(body)
            except ValueError:
                raise WebhookVerificationError("the body is not JSON") from None
    raise WebhookVerificationError("no signature matches")
