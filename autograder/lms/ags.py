"""LTI Advantage Assignment and Grade Services, tool side, over pylti1p3's service client.

pylti1p3's ServiceConnector signs the client-credentials JWT assertion with the tool's key and
asks the LMS for an access token; AssignmentsGradesService finds, creates and scores line items.
Added here: the token's granted scopes and expiry are kept (pylti1p3 drops them), so a missing
scope or an expired token is refused before anything is posted, a token that expires during a
long run is fetched again once, and the LMS's refusals become messages saying what to check.
"""
from __future__ import annotations

import json
import time

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.registration import Registration
from pylti1p3.service_connector import ServiceConnector

from autograder.lms.config import LmsConfig
from autograder.lms.errors import LmsError

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
SCORE, LINEITEM, LINEITEM_READ, RESULT_READ = (AGS + s for s in ("score", "lineitem", "lineitem.readonly", "result.readonly"))
TIMEOUT = 30


def public_key_pem(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def tool_jwks(private_pem: str) -> dict:
    """The key set to register in the LMS (or serve at the hub's /hub/lti13/jwks)."""
    reg = Registration().set_tool_public_key(public_key_pem(private_pem))
    return {"keys": reg.get_jwks()}


def _why(r: requests.Response) -> str:
    try:
        body = r.json()
        text = " ".join(str(body.get(k)) for k in ("error", "error_description") if body.get(k)) if isinstance(body, dict) else ""
    except ValueError:
        text = ""
    return f"HTTP {r.status_code}" + (f" ({text[:300]})" if text else "")


class _Connector(ServiceConnector):
    """pylti1p3's connector, keeping what the token response says: scopes and expiry."""

    def __init__(self, registration: Registration, session: requests.Session):
        super().__init__(registration, session)
        self.granted: set[str] = set()
        self.expires_at = 0.0

    def get_access_token(self, scopes):
        if self._access_tokens and time.time() < self.expires_at - 5:
            return next(iter(self._access_tokens.values()))
        self._access_tokens.clear()
        try:
            token = super().get_access_token(scopes)
        except LtiServiceException as e:
            r = e.response
            hint = ("the LMS did not accept the tool's key: register the public key (or key set URL) that "
                    "belongs to private_key_file, under this client id" if r.status_code in (400, 401) else "")
            raise LmsError(f"the LMS refused an access token at {r.url}: {_why(r)}" + (f"; {hint}" if hint else "")) from None
        except requests.RequestException as e:
            raise LmsError(f"the LMS's token endpoint cannot be reached: {e}") from None
        try:
            lifetime = float(self._requests_session.last_token.get("expires_in", 3600))
        except (TypeError, ValueError):
            lifetime = 3600.0
        self.expires_at = time.time() + lifetime      # a token fetched again mid-run is kept, too
        return token

    def make_service_request(self, *args, **kwargs):
        for attempt in (1, 2):
            try:
                return super().make_service_request(*args, **kwargs)
            except LtiServiceException as e:
                r = e.response
                if r.status_code == 401 and attempt == 1:
                    self._access_tokens.clear()      # expired during the run: one new token
                    self.expires_at = 0.0
                    continue
                if r.status_code == 401:
                    raise LmsError(f"the LMS refused the access token at {r.url}: {_why(r)} "
                                   "(expired or revoked; check the LMS's and this machine's clocks)") from None
                if r.status_code == 403:
                    raise LmsError(f"the LMS refused {r.url}: {_why(r)}: the tool's registration lacks a scope") from None
                raise LmsError(f"the LMS answered {r.url}: {_why(r)}") from None
            except requests.RequestException as e:
                raise LmsError(f"the LMS cannot be reached: {e}") from None


class _Session(requests.Session):
    """Reads each token response's scope and expires_in for the connector (pylti1p3 keeps only
    the token), and puts a timeout on every request."""

    def __init__(self, token_url: str):
        super().__init__()
        self.token_url = token_url
        self.last_token: dict = {}
        self.headers["User-Agent"] = "roofline-autograder (pylti1p3)"

    def request(self, method, url, *args, **kwargs):
        kwargs.setdefault("timeout", TIMEOUT)
        r = super().request(method, url, *args, **kwargs)
        if url == self.token_url and r.ok:
            try:
                self.last_token = r.json() if isinstance(r.json(), dict) else {}
            except ValueError:
                self.last_token = {}
        return r


class Ags:
    """One LMS context's line items and scores, for the tool registered as `config`."""

    def __init__(self, config: LmsConfig, lineitems_url: str):
        private = config.private_key()
        reg = (Registration().set_client_id(config.client_id).set_auth_token_url(config.token_url)
               .set_tool_private_key(private).set_tool_public_key(public_key_pem(private)))
        if config.token_audience:
            reg.set_auth_audience(config.token_audience)
        self.session = _Session(config.token_url)
        self.connector = _Connector(reg, self.session)
        self.lineitems_url = lineitems_url
        self.granted: set[str] = set()
        self.service: AssignmentsGradesService | None = None

    def connect(self, need=(SCORE, LINEITEM), want=(RESULT_READ,)) -> set[str]:
        """An access token for `need` + `want`; refuses (LmsError) unless every scope of `need`
        is granted and the token is still valid. Returns the granted scopes."""
        asked = sorted(set(need) | set(want))
        self.connector.get_access_token(asked)
        resp = self.session.last_token
        granted = set(str(resp.get("scope") or " ".join(asked)).split())
        missing = sorted(set(need) - granted)
        if missing:
            raise LmsError("the LMS did not grant the scope(s) " + ", ".join(missing) +
                           ": enable them in the tool's registration (Canvas: the developer key's LTI Advantage "
                           "services; Moodle: 'IMS LTI Assignment and Grade Services: use this service for grade "
                           "sync and column management')")
        if self.connector.expires_at <= time.time():
            lifetime = resp.get("expires_in")
            raise LmsError(f"the LMS issued an access token that has already expired (expires_in {lifetime} s): "
                           "check the LMS's token lifetime and both machines' clocks")
        self.granted = granted
        self.service = AssignmentsGradesService(self.connector, {"scope": sorted(granted), "lineitems": self.lineitems_url})
        return granted

    def find_or_create(self, resource_id: str, label: str, maximum: float, url: str | None = None) -> tuple[dict, bool]:
        """The line item (as the LMS holds it) and whether it was created now: `url` if given,
        else the one whose resourceId is `resource_id`, else a new one."""
        try:
            if url:
                return self._as_dict(self.service.get_lineitem(url)), False
            found = self.service.find_lineitem_by_resource_id(resource_id)
            if found is not None:
                return self._as_dict(found), False
            item = LineItem().set_label(label).set_score_maximum(maximum).set_resource_id(resource_id).set_tag("roofline-course")
            return self._as_dict(self.service.find_or_create_lineitem(item, find_by="resource_id")), True
        except LtiException as e:
            raise LmsError(f"line item of {resource_id}: {e}") from None

    def results(self, lineitem: dict) -> dict[str, dict] | None:
        """userId -> result of the line item; None without the result.readonly scope."""
        if RESULT_READ not in self.granted:
            return None
        return {r["userId"]: r for r in self.service.get_grades(LineItem(lineitem)) if isinstance(r, dict) and "userId" in r}

    def post(self, lineitem: dict, user_id: str, score: float, maximum: float, comment: str, timestamp: str) -> None:
        grade = (Grade().set_user_id(user_id).set_score_given(score).set_score_maximum(maximum)
                 .set_activity_progress("Completed").set_grading_progress("FullyGraded").set_timestamp(timestamp))
        if comment:
            grade.set_comment(comment)
        self.service.put_grade(grade, LineItem(lineitem))

    @staticmethod
    def _as_dict(item: LineItem) -> dict:
        return json.loads(item.get_value()) | ({"id": item.get_id()} if item.get_id() else {})
