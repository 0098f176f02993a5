"""Property-based API fuzzing with Schemathesis, in-process, on both dialects.

Every operation of the generated OpenAPI document (``/api/v1/openapi.json``) is
exercised with schema-conforming ("positive") and schema-violating
("negative") requests, once signed in (bearer token of the instance admin) and
once anonymously. The operations are discovered from the document, so routes
added later are fuzzed without touching this file.

Assertions, for every response:

- no 5xx (``not_a_server_error``): a bad input never yields 500;
- a request that violates the document is rejected with a 4xx
  (``negative_data_rejection``);
- the status code is one the document declares (``status_code_conformance``);
- the body is JSON and conforms to the documented response schema
  (``content_type_conformance``, ``response_schema_conformance``); and
- every 4xx body is the gateway error shape: ``code`` (int) and ``message``
  (non-empty string), plus ``details``.

Two narrow relaxations, both explained where they apply (``_fuzz_operation``):
a 2xx file download (``/file/...``) is not held to the document's media type
(it answers the uploaded file's own type; a well-formed Content-Type is still
required), and a negative example whose negated path parameter turned the URL
into another route's may answer 405.

Half of the positive examples have their path parameters pointed at real
resources (``Instance.use_real_values``), since random names only ever reach
the 404 branch.

No operation is excluded. Those that would take the fuzzing credential away
are sent with a throwaway credential instead (see ``prepare`` in
``test_fuzz_signed_in``):

- ``AuthService_SignOut`` revokes the caller's session, and
  ``AuthService_RefreshToken`` replaces it: sent as a throwaway user.
- ``UserService_UpdateUser`` can change the caller's password, username,
  role or state: sent as a throwaway user editing itself (even examples) or as
  the admin editing a throwaway user (odd examples); never targets the admin.
- ``UserService_DeleteUser``: sent as the admin against a throwaway user.

Sign-in throttling is lifted for this app (``signin_failure_limit``), since the
fuzzer's random ``AuthService_SignIn`` calls would otherwise lock out the
sign-ins that create the throwaway credentials; the throttle has its own tests.

Knobs: ``DAYBOOK_FUZZ_EXAMPLES=<n>`` for a deeper run, ``DAYBOOK_FUZZ_DEBUG=1``
prints the status codes seen per operation (run with ``-s``).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.python import asgi as st_asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from app.server import create_app
from app.settings import Settings

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

# Examples per operation (positive; negative gets half). The anonymous pass
# mostly meets the 401 wall, so it gets fewer. DAYBOOK_FUZZ_EXAMPLES=<n> runs a
# deeper search (n for the signed-in pass).
# PostgreSQL gets half, to keep both dialects within about three minutes.
_N = int(os.environ.get("DAYBOOK_FUZZ_EXAMPLES", "4"))


def budget(dialect: str, anonymous: bool = False) -> int:
    n = _N if dialect == "sqlite" else max(3, _N // 2)
    return max(2, n // 3) if anonymous else n


ADMIN, ADMIN_PASSWORD = "alice", "password-1"
TMP_PASSWORD = "password-tmp-1"

# Operations whose effect on the caller would end the fuzzing credential.
SELF_DESTRUCTIVE = {
    "AuthService_SignOut",
    "AuthService_RefreshToken",
    "UserService_UpdateUser",
    "UserService_DeleteUser",
}


def error_body_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx answers ``{"code": int, "message": str, "details": [...]}``."""
    if not 400 <= response.status_code < 500:
        return None
    status = response.status_code
    try:
        body = response.json()
    except Exception as exc:
        raise AssertionError(f"{status} body is not JSON: {response.text[:200]!r}") from exc
    assert isinstance(body, dict), f"{status} body is not an object: {body!r}"
    assert isinstance(body.get("code"), int), f"{status} body without an int code: {body}"
    assert isinstance(body.get("message"), str) and body["message"], f"no message: {body}"
    assert isinstance(body.get("details"), list), f"no details list: {body}"
    return True


def content_type_well_formed(ctx: Any, response: Any, case: Any) -> bool | None:
    """A Content-Type names one media type and each parameter at most once."""
    values = response.headers.get("content-type") or []
    assert len(values) <= 1, f"several Content-Type headers: {values}"
    if values:
        media, *params = (part.strip() for part in values[0].split(";"))
        names = [p.split("=", 1)[0].strip().lower() for p in params if p]
        assert "/" in media and len(names) == len(set(names)), f"malformed: {values[0]!r}"
    return True


CHECKS = [
    content_type_well_formed,
    not_a_server_error,
    negative_data_rejection,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    error_body_shape,
]


class Instance:
    """The app under test plus helpers that talk to it through Schemathesis' ASGI client."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._names = itertools.count()
        self.admin_token = ""
        self.memos: list[str] = []
        self._real: dict[str, str] = {}

    def request(self, method: str, url: str, **kw: Any) -> Any:
        with st_asgi.get_client(self.app) as client:
            return client.request(method, url, **kw)

    def sign_in(self, username: str, password: str) -> str:
        r = self.request(
            "POST",
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": username, "password": password}},
        )
        assert r.status_code == 200, r.text
        return str(r.json()["accessToken"])

    def sign_up(
        self, username: str, password: str, admin_token: str | None = None, role: str | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {admin_token}"} if admin_token else {}
        body = {"username": username, "password": password, **({"role": role} if role else {})}
        r = self.request("POST", "/api/v1/users", json=body, headers=headers)
        assert r.status_code in (200, 201), r.text

    def throwaway(self, admin_token: str) -> tuple[str, str]:
        """A fresh ordinary user and its session token."""
        name = f"tmp{next(self._names)}"
        self.sign_up(name, TMP_PASSWORD, admin_token)
        return name, self.sign_in(name, TMP_PASSWORD)

    def setup_admin(self) -> str:
        """The instance admin, with a few memos (one PUBLIC); answers its token."""
        self.sign_up(ADMIN, ADMIN_PASSWORD)
        self.admin_token = self.sign_in(ADMIN, ADMIN_PASSWORD)
        self.memos = [
            self.memo("hello #work/project", visibility="PUBLIC"),
            self.memo("# Title\n\n- [ ] task"),
            self.memo("`code` https://example.com"),
        ]
        return self.admin_token

    def memo(self, content: str, **fields: Any) -> str:
        r = self.request(
            "POST",
            "/api/v1/memos",
            json={"content": content, **fields},
            headers={"Authorization": f"Bearer {self.admin_token}"},
        )
        assert r.status_code in (200, 201), r.text
        return str(r.json()["name"])

    def create(self, url: str, body: dict[str, Any]) -> str | None:
        """POST as the admin; the new resource's ``name``, or None if the route refuses.

        Best effort: these only aim examples at real resources, so a route
        whose request shape changes costs coverage, not a false failure.
        """
        r = self.request(
            "POST", url, json=body, headers={"Authorization": f"Bearer {self.admin_token}"}
        )
        if r.status_code not in (200, 201):
            return None
        data = r.json()
        for key in ("name", "personalAccessToken", "reaction", "memoShare", "share"):
            value = data.get(key) if isinstance(data, dict) else None
            if isinstance(value, dict):
                value = value.get("name")
            if isinstance(value, str):
                return value
        return None

    def real(self, kind: str, fresh: bool) -> str | None:
        """The name of an existing ``kind`` resource; a new one when ``fresh``."""
        if not fresh and kind in self._real:
            return self._real[kind]
        memo = self.memos[0]
        makers: dict[str, Callable[[], str | None]] = {
            "memo": lambda: self.memo("to be deleted #tmp"),
            "space": lambda: self.create("/api/v1/spaces", {"title": "Fuzz", "description": ""}),
            "share": lambda: self.create(f"/api/v1/{memo}/shares", {}),
            "attachment": lambda: self.create(
                "/api/v1/attachments",
                {"filename": "fuzz.txt", "type": "text/plain", "content": "aGVsbG8="},
            ),
            "reaction": lambda: self.create(f"/api/v1/{memo}/reactions", {"reactionType": "👍"}),
            "view": lambda: self.create(
                f"/api/v1/users/{ADMIN}/views", {"title": "Fuzz", "filter": "pinned"}
            ),
            "token": lambda: self.create(
                f"/api/v1/users/{ADMIN}/personalAccessTokens", {"description": "fuzz"}
            ),
        }
        name = makers[kind]() if kind in makers else None
        if name is not None and not fresh:
            self._real[kind] = name
        return name

    def use_real_values(self, case: Any, n: int) -> None:
        """Point every other positive example at existing resources.

        Random path values almost always answer 404, which leaves the handlers
        behind the lookup unexercised; known parameters get a real value on
        odd examples (a fresh resource for a DELETE, in either accepted
        spelling where there are two). Unknown parameters keep their values.
        """
        if n % 2 == 0 or not case.path_parameters or not _positive(case):
            return
        params = case.path_parameters
        fresh = case.method.upper() == "DELETE"
        short = n % 4 == 3

        def last(name: str | None) -> str | None:
            return name.rsplit("/", 1)[1] if name else None

        def put(param: str, value: Any) -> None:
            if param in params and value is not None:
                params[param] = value

        if "memo" in params:
            memo = self.real("memo", True) if fresh and len(params) == 1 else self.memos[n % 3]
            put("memo", last(memo) if short else memo)
        if "user" in params:
            put("user", ADMIN if short else f"users/{ADMIN}")
        put("username", ADMIN)
        put("setting", "ACCESS" if short else "instance/settings/ACCESS")
        if "space" in params:
            space = self.real("space", fresh)
            put("space", last(space) if short else space)
        for param, kind in (
            ("share", "share"),
            ("token", "share"),
            ("reaction", "reaction"),
            ("view_id", "view"),
            ("token_id", "token"),
        ):
            if param in params:
                value = last(self.real(kind, fresh))
                if value is not None and param.endswith("_id"):
                    value = int(value) if value.isdigit() else None
                put(param, value)
        if "attachment" in params or "uid" in params:
            attachment = self.real("attachment", fresh)
            put("attachment", last(attachment) if short else attachment)
            put("uid", last(attachment))
            put("filename", "fuzz.txt")
        if "memo" in params and ("share" in params or "reaction" in params):
            put("memo", self.memos[0])  # where the share/reaction was made


@pytest.fixture
def instance(settings: Settings) -> Iterator[Instance]:
    # The database is already at head (conftest clones a migrated template):
    # skip the migration run in the lifespan.
    app = create_app(
        dataclasses.replace(
            settings,
            migrate_on_start=False,
            signin_failure_limit=1_000_000,
            signin_client_limit=1_000_000,
        )
    )
    try:
        yield Instance(app)
    finally:
        # Schemathesis keeps the lifespan (and the engine) alive for the
        # process; stop it so the database can be dropped.
        st_asgi.shutdown_lifespans()


def _positive(case: Any) -> bool:
    return case.meta is None or bool(case.meta.generation.mode.is_positive)


def _refers_to(value: Any, username: str) -> bool:
    return isinstance(value, str) and value.strip("/").removeprefix("users/") == username


def _fuzz(
    instance: Instance,
    prepare: Callable[[Any, int], dict[str, str]],
    examples: int,
) -> tuple[list[str], Counter[str]]:
    """Run every operation in both generation modes; answer (failures, status counts)."""
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", instance.app)
    failures: list[str] = []
    statuses: Counter[str] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15, [op.label for op in operations]
    for operation in operations:
        for mode, count in (
            (GenerationMode.POSITIVE, examples),
            (GenerationMode.NEGATIVE, max(1, examples // 2)),
        ):
            failures.extend(_fuzz_operation(operation, mode, count, prepare, statuses))
    if os.environ.get("DAYBOOK_FUZZ_DEBUG"):
        print("STATUSES", dict(sorted(statuses.items())), "FAILURES", failures)
    return failures, statuses


def _fuzz_operation(
    operation: Any,
    mode: GenerationMode,
    examples: int,
    prepare: Callable[[Any, int], dict[str, str]],
    statuses: Counter[str],
) -> list[str]:
    counter = itertools.count()
    seen: list[str] = []

    @hsettings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        headers = prepare(case, next(counter))
        response = case.call(headers=headers)
        statuses[f"{operation.label} {response.status_code}"] += 1
        checks = CHECKS
        if case.path.startswith("/file/") and 200 <= response.status_code < 300:
            # File downloads answer the uploaded file's own type; the document
            # cannot name it (it says application/json: Litestar's default for
            # a handler returning Response[bytes]).
            checks = [not_a_server_error, status_code_conformance, content_type_well_formed]
        elif not mode.is_positive and response.status_code == 405:
            # A negated path parameter ("", "/") can make the URL another
            # route's (e.g. .../invitations/:accept): a correct 405 for a
            # request that is no longer this operation's.
            checks = [not_a_server_error, content_type_well_formed, error_body_shape]
        elif response.status_code == 413:
            # A generated body past the route's size limit (app.api.body_limits,
            # decision 0018): refused unread, whatever its shape.
            checks = [not_a_server_error, content_type_well_formed, error_body_shape]
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except (Exception, BaseExceptionGroup) as exc:  # collected: one bad operation
            # must not hide the others (schemathesis' FailureGroup is a BaseExceptionGroup)
            if len(seen) < 2:
                seen.append(f"[{mode.value}] {operation.label}: {exc}")

    try:
        run()
    except Unsatisfiable:
        # Nothing to negate (an operation without parameters or body).
        if mode.is_positive:
            raise
    return seen


def _assert_clean(failures: list[str]) -> None:
    assert not failures, f"{len(failures)} failing operation(s):\n\n" + "\n\n".join(failures)


def test_fuzz_signed_in(instance: Instance, dialect: str) -> None:
    """Every operation, signed in as the instance admin (bearer session token)."""
    started = time.monotonic()
    admin_token = instance.setup_admin()
    admin = {"Authorization": f"Bearer {admin_token}"}

    def prepare(case: Any, n: int) -> dict[str, str]:
        op_id = case.operation.definition.raw.get("operationId")
        if op_id not in SELF_DESTRUCTIVE:
            instance.use_real_values(case, n)
            return admin
        params = case.path_parameters if case.path_parameters is not None else {}
        name, token = instance.throwaway(admin_token)
        if op_id in ("AuthService_SignOut", "AuthService_RefreshToken"):
            return {"Authorization": f"Bearer {token}"}
        positive = _positive(case)
        if op_id == "UserService_UpdateUser" and n % 2 == 0:
            # A throwaway user editing itself (password, username ...).
            if positive or _refers_to(params.get("user"), ADMIN):
                params["user"] = name
            return {"Authorization": f"Bearer {token}"}
        # The admin acting on a throwaway user (UpdateUser odd examples, DeleteUser).
        if positive or _refers_to(params.get("user"), ADMIN):
            params["user"] = f"users/{name}" if n % 3 == 0 else name
        return admin

    failures, statuses = _fuzz(instance, prepare, budget(dialect))

    # The credential survived the run, and the run was not just a wall of 401s.
    r = instance.request("GET", "/api/v1/auth/me", headers=admin)
    assert r.status_code == 200, r.text
    assert r.json()["user"]["role"] == "ADMIN"
    # Random inputs mostly earn 400/404, so "not a wall" is judged by the
    # credential: few 401s, and a success on many distinct operations.
    ok_ops = {key.rsplit(" ", 1)[0] for key in statuses if key.rsplit(" ", 1)[1].startswith("2")}
    unauthorized = sum(n for key, n in statuses.items() if key.endswith(" 401"))
    assert len(ok_ops) >= 15, statuses
    assert unauthorized <= sum(statuses.values()) // 10, statuses
    _assert_clean(failures)
    assert time.monotonic() - started < 180


def test_fuzz_anonymous(instance: Instance, dialect: str) -> None:
    """Every operation without credentials: 401/403/404/400 or a public answer, never 5xx."""
    instance.setup_admin()  # an initialised instance with content, as in production

    def prepare(case: Any, n: int) -> dict[str, str]:
        instance.use_real_values(case, n)
        return {}

    failures, statuses = _fuzz(instance, prepare, budget(dialect, anonymous=True))
    assert any(key.endswith(" 401") for key in statuses), statuses
    _assert_clean(failures)
