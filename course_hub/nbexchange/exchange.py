"""The base of the service exchange's nbgrader plugin classes: where the course service is, whose
token to send, and the HTTP calls every operation makes (course_hub.service.exchange serves them).

    c.Exchange.service_url   the course service's URL (default: $COURSE_SERVICE_URL), e.g.
                             http://127.0.0.1:8000/services/course (the hub's proxy) or the
                             service's own http://127.0.0.1:8790
    c.Exchange.token         the user's JupyterHub API token (default: $JUPYTERHUB_API_TOKEN)

A refusal from the service (its JSON "error") becomes nbgrader's ExchangeError, with the service's
words; so does a service that cannot be reached (the Assignment List and the Formgrader then say
the exchange is missing, as they do for a missing exchange folder).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import urllib.error
import urllib.parse
import urllib.request

from dateutil.tz import gettz
from nbgrader.exchange.abc import Exchange as ABCExchange
from traitlets import Bool, Float, Integer, Unicode, default

MAX_DOWNLOAD = 64 << 20          # bytes of one archive or page read from the service
MAX_ERROR = 64 << 10


class Exchange(ABCExchange):
    """nbgrader's Exchange, over HTTP to the course service."""

    service_url = Unicode(help="The course service's URL (default: the environment's COURSE_SERVICE_URL)").tag(config=True)
    token = Unicode(help="The user's JupyterHub API token (default: the environment's JUPYTERHUB_API_TOKEN)").tag(config=True)
    timeout = Float(120.0, help="Seconds to wait for the course service").tag(config=True)
    max_download = Integer(MAX_DOWNLOAD, help="Bytes of one download at most").tag(config=True)
    path_includes_course = Bool(
        False, help="Whether fetched assignments go into <course_id>/<assignment_id> rather than <assignment_id> "
                    "(as nbgrader's own exchange)").tag(config=True)

    @default("service_url")
    def _service_url_default(self):
        return os.environ.get("COURSE_SERVICE_URL", "")

    @default("token")
    def _token_default(self):
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    # -- HTTP
    def call(self, method: str, *parts: str, params: dict | None = None, data: bytes | None = None,
             content_type: str = "application/octet-stream", raw: bool = False):
        """The service's answer to METHOD /exchange/<parts...>: parsed JSON, or bytes when `raw`
        (with the response's headers as a second value). ExchangeError for any refusal."""
        if not self.service_url:
            self.fail("No course service URL: set COURSE_SERVICE_URL or c.Exchange.service_url in nbgrader_config.py")
        if not self.token:
            self.fail("No JupyterHub API token (JUPYTERHUB_API_TOKEN): the service exchange works on the hub only")
        url = self.service_url.rstrip("/") + "/exchange/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
        headers = {"Authorization": f"token {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        what = f"{method} {'/'.join(parts)}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read(self.max_download + 1)
                if len(body) > self.max_download:
                    self.fail(f"{what}: the service sent more than {self.max_download} bytes")
                if raw:
                    return body, resp.headers
                return json.loads(body or b"{}")
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read(MAX_ERROR)).get("error") or e.reason
            except (ValueError, AttributeError, OSError):
                message = e.reason
            self.refused(e.code, f"the course service refused {what} ({e.code}): {message}")
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            self.fail(f"cannot reach the course service at {self.service_url} ({reason}); if you sent a large "
                      "folder, it may be over the service's limit")
        except ValueError:
            self.fail(f"{what}: the course service's answer is not JSON")

    def refused(self, status: int, message: str):
        """Called with the service's refusal; fails (ExchangeError) unless a subclass handles the status."""
        self.fail(message)

    # -- shared helpers
    def require_course(self) -> str:
        if not self.coursedir.course_id:
            self.fail("No course id specified. Re-run with --course flag.")
        return self.coursedir.course_id

    def check_access(self, course_id: str) -> None:
        if self.authenticator is not None and not self.authenticator.has_access(self.coursedir.student_id, course_id):
            self.fail("You do not have access to this course.")

    def local_dir(self, course_id: str, assignment_id: str) -> str:
        """Where a student's copy of the assignment lives (nbgrader's own convention)."""
        if self.path_includes_course:
            return os.path.join(self.assignment_dir, course_id, assignment_id)
        return os.path.join(self.assignment_dir, assignment_id)

    def service_time(self, iso: str) -> dt.datetime:
        """A time the service recorded (ISO 8601, UTC), as an aware datetime."""
        return dt.datetime.fromisoformat(iso).astimezone(dt.timezone.utc)

    def format_time(self, iso: str) -> str:
        """A time the service recorded, written as nbgrader writes timestamps (timezone, timestamp_format)."""
        tz = gettz(self.timezone)
        if tz is None:
            self.fail("Invalid timezone: {}".format(self.timezone))
        return self.service_time(iso).astimezone(tz).strftime(self.timestamp_format)

    def init_src(self):
        pass

    def init_dest(self):
        pass

    def copy_files(self):
        pass
