"""Signing, backoff and the SSRF rule, without a database."""

from __future__ import annotations

import dataclasses
import time

import httpx
import pytest
from standardwebhooks import Webhook

from app.net import guarded
from app.webhooks.delivery import Policy, backoff_ms, judge
from app.webhooks.signing import generate_secret, sign, signing_key, validate_secret
from tests.webhooks.conftest import HANG, Receiver

OPEN = guarded.Policy()


async def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    policy: guarded.Policy,
    deadline: float,
    max_body: int = 64 * 1024,
    resolver: guarded.Resolver = guarded.system_resolver,
) -> guarded.Reply:
    """A webhook's exchange: what delivery sends, with delivery's limits."""
    limits = dataclasses.replace(Policy(policy, timeout=deadline).limits, max_bytes=max_body)
    return await guarded.request(
        "POST", url, content=body, headers=headers, policy=policy, limits=limits, resolver=resolver
    )


LOOPBACK = guarded.Policy.parse("127.0.0.1")


def test_signature_matches_the_spec_test_vector() -> None:
    # The Standard Webhooks specification's example (secret, id, timestamp, body).
    headers = sign(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        b'{"test": 2432232314}',
    )
    assert headers == {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }


def test_generated_secrets_verify_and_memos_raw_secrets_are_raw_bytes() -> None:
    secret = generate_secret()
    assert secret.startswith("whsec_") and len(signing_key(secret)) == 32
    body = b'{"a":1}'
    headers = sign(secret, "msg_1", int(time.time()), body)
    assert Webhook(secret).verify(body, headers) == {"a": 1}
    assert signing_key("plain-memos-secret") == b"plain-memos-secret"


@pytest.mark.parametrize("bad", ["whsec_!!notbase64", "line\nbreak", "x" * 300, "whsec_"])
def test_bad_client_secrets_are_refused(bad: str) -> None:
    from app.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        validate_secret(bad)


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = Policy(OPEN, retry_base=5, retry_cap=60, jitter=0.1)
    assert [backoff_ms(n, policy, rand=0) for n in range(1, 7)] == [
        5000,
        10000,
        20000,
        40000,
        60000,
        60000,
    ]
    assert backoff_ms(3, policy, rand=1) == 22000  # jitter only ever adds, up to 10%


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # CGNAT
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:169.254.169.254",
    ],
)
async def test_private_addresses_are_refused(address: str) -> None:
    with pytest.raises(guarded.Refused):
        await guarded.checked(address, 80, OPEN)


async def test_public_addresses_and_the_allowlist() -> None:
    assert await guarded.checked("93.184.216.34", 80, OPEN) == ["93.184.216.34"]
    assert await guarded.checked("127.0.0.1", 80, LOOPBACK) == ["127.0.0.1"]
    with pytest.raises(guarded.Refused):
        await guarded.checked("127.0.0.2", 80, LOOPBACK)
    cidr = guarded.Policy.parse("10.0.0.0/8, hooks.internal")
    assert await guarded.checked("10.2.3.4", 80, cidr) == ["10.2.3.4"]

    async def internal(host: str, port: int) -> list[str]:
        return ["192.168.7.7"]

    assert await guarded.checked("hooks.internal", 80, cidr, internal)
    with pytest.raises(ValueError, match="not an IP"):
        guarded.Policy.parse("http://x/")


async def test_a_name_rebound_to_loopback_is_refused_at_connect(receiver: Receiver) -> None:
    """The client resolves the name itself and checks what it will connect to:
    a public-looking host that resolves to 127.0.0.1 never gets a request."""
    port = receiver.url.split(":")[2].split("/")[0]

    async def rebinding(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with pytest.raises(guarded.Refused):
        await post(
            f"http://hooks.example.com:{port}/hook",
            b"{}",
            {},
            policy=OPEN,
            deadline=2,
            resolver=rebinding,
        )

    # One address among several public ones is enough to refuse the host.
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.1"]

    with pytest.raises(guarded.Refused):
        await post("http://hooks.example.com/", b"{}", {}, policy=OPEN, deadline=2, resolver=mixed)
    assert receiver.received == []
    # Allowed, the name reaches the address the resolver gave (and nothing else).
    reply = await post(
        f"http://hooks.example.com:{port}/hook",
        b"{}",
        {},
        policy=LOOPBACK,
        deadline=2,
        resolver=rebinding,
    )
    assert reply.status_code == 200 and len(receiver.received) == 1


async def test_redirects_are_not_followed(receiver: Receiver) -> None:
    other = Receiver()
    from tests.webhooks.conftest import serve

    server = serve(other)
    try:
        receiver.replies = [(302, other.url.encode())]
        reply = await post(receiver.url, b"{}", {}, policy=LOOPBACK, deadline=2)
        assert reply.status_code == 302
        assert judge(reply).outcome == "FAILED"
        assert other.received == []
    finally:
        server.shutdown()
        server.server_close()


async def test_response_size_and_time_are_bounded(receiver: Receiver) -> None:
    receiver.replies = [(200, b"x" * (4 * 1024 * 1024))]
    reply = await post(receiver.url, b"{}", {}, policy=LOOPBACK, deadline=5, max_body=64 * 1024)
    assert reply.status_code == 200 and len(reply.body) == 64 * 1024
    receiver.replies = [HANG]
    started = time.monotonic()
    with pytest.raises((TimeoutError, httpx.TimeoutException)):
        await post(receiver.url, b"{}", {}, policy=LOOPBACK, deadline=0.5)
    assert time.monotonic() - started < 2


def test_memos_error_codes_in_a_2xx_body_are_failures() -> None:
    ok = guarded.Reply(200, b'{"code":0}', 1)
    assert judge(ok).outcome == "DELIVERED"
    assert judge(guarded.Reply(204, b"", 1)).outcome == "DELIVERED"
    bad = judge(guarded.Reply(200, b'{"code":3,"message":"nope"}', 1))
    assert bad.outcome == "FAILED" and bad.error == "code 3: nope"
    assert judge(guarded.Reply(500, b"", 1)).outcome == "FAILED"
