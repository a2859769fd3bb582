"""Call the emi partner API with signature version 2, standard library only.

    EMI_URL={base_url} EMI_API_KEY=... EMI_API_SECRET=... python3 sign.py
"""
import hashlib
import hmac
import os
import secrets
import time
import urllib.error
import urllib.request


def sign(secret, key, ts, operation, method, target, nonce, body):
    """x-hash: HMAC-SHA256 over api_key + timestamp + operation + METHOD +
    path (with its query) + nonce + the body exactly as sent."""
    message = (key + ts + operation + method + target + nonce).encode() + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def call(method, path, operation, body=b""):
    key, secret = os.environ["EMI_API_KEY"], os.environ["EMI_API_SECRET"]
    ts, nonce = str(int(time.time())), secrets.token_hex(8)
    headers = {"x-api-key": key, "x-timestamp": ts, "x-signature-version": "2", "x-nonce": nonce,
               "x-hash": sign(secret, key, ts, operation, method, path, nonce, body)}
    if body:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(os.environ["EMI_URL"] + path, data=body or None, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req) as res:
            status, answer = res.status, res.read()
    except urllib.error.HTTPError as err:  # 4xx and 5xx carry the envelope too
        status, answer = err.code, err.read()
    print(f"{method} {path}: HTTP {status} {answer.decode()}", end="")


call("GET", "/v2/partner", "partner_details")
call("POST", "/v1/aml", "aml_check", b'{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}')
