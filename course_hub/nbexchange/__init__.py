"""The service exchange: nbgrader 0.9's exchange plugin classes (nbgrader.exchange.abc) over HTTP
to the course service (course_hub.service.exchange), selected in nbgrader_config.py with

    c.ExchangeFactory.exchange = "course_hub.nbexchange.Exchange"
    c.ExchangeFactory.release_assignment = "course_hub.nbexchange.ExchangeReleaseAssignment"
    c.ExchangeFactory.fetch_assignment = "course_hub.nbexchange.ExchangeFetchAssignment"
    c.ExchangeFactory.submit = "course_hub.nbexchange.ExchangeSubmit"
    c.ExchangeFactory.list = "course_hub.nbexchange.ExchangeList"
    c.ExchangeFactory.collect = "course_hub.nbexchange.ExchangeCollect"
    c.ExchangeFactory.release_feedback = "course_hub.nbexchange.ExchangeReleaseFeedback"
    c.ExchangeFactory.fetch_feedback = "course_hub.nbexchange.ExchangeFetchFeedback"
    c.Exchange.service_url = "http://127.0.0.1:8000/services/course"   # else $COURSE_SERVICE_URL

(`configure(c)` sets all of these.) Every request carries the user's hub token
($JUPYTERHUB_API_TOKEN); the service, not this client, decides who may do what.
"""
from __future__ import annotations

from .collect import ExchangeCollect
from .exchange import Exchange
from .feedback import ExchangeFetchFeedback, ExchangeReleaseFeedback
from .fetch import ExchangeFetchAssignment
from .listing import ExchangeList
from .release import ExchangeReleaseAssignment
from .submit import ExchangeSubmit

CLASSES = {"exchange": "Exchange", "release_assignment": "ExchangeReleaseAssignment",
           "fetch_assignment": "ExchangeFetchAssignment", "submit": "ExchangeSubmit", "list": "ExchangeList",
           "collect": "ExchangeCollect", "release_feedback": "ExchangeReleaseFeedback",
           "fetch_feedback": "ExchangeFetchFeedback"}


def configure(c, service_url: str | None = None) -> None:
    """Select the service exchange in an nbgrader config `c` (and its URL, if given)."""
    for op, name in CLASSES.items():
        setattr(c.ExchangeFactory, op, f"course_hub.nbexchange.{name}")
    if service_url:
        c.Exchange.service_url = service_url


__all__ = ["Exchange", "ExchangeCollect", "ExchangeFetchAssignment", "ExchangeFetchFeedback", "ExchangeList",
           "ExchangeReleaseAssignment", "ExchangeReleaseFeedback", "ExchangeSubmit", "configure", "CLASSES"]
