"""The hub's LTI 1.3 login (course_hub.lti, issue 35), short of a running hub: the kit's
jupyterhub_config.py with an lti.json selects it, and a launch's verified claims become a valid,
stable hub user in the right group, recorded for `export --lms`, sent to the lesson it asked for.

The whole launch in Chromium through a running hub (OIDC initiation, id_token validation by
jupyterhub-ltiauthenticator) is not here: see deploy/lti.md, "What is tested".
"""
from __future__ import annotations

import asyncio
import json
import stat
import types

import pytest
from hypothesis import given, settings, strategies as st

from course_hub import lti
from course_hub.service.base import USER
from autograder.lms import roster
from lti_platform import AGS_CLAIM, CUSTOM_CLAIM, DEPLOYMENT_CLAIM, INSTRUCTOR, LEARNER, LTI
from test_hub_spawners import load_config

ISS = "https://canvas.example.edu"


def settings_file(tmp_path, **extra) -> str:
    s = {"issuer": ISS, "client_id": "10000000000042", "deployment_ids": ["7:abc"],
         "authorize_url": ISS + "/api/lti/authorize_redirect", "jwks_url": ISS + "/api/lti/security/jwks",
         "create_system_users": False, **extra}
    path = tmp_path / "lti-settings.json"
    path.write_text(json.dumps(s))
    return str(path)


def claims(sub: str, roles=(LEARNER,), **more) -> dict:
    return {"iss": ISS, "sub": sub, "aud": "10000000000042", DEPLOYMENT_CLAIM: "7:abc", LTI + "roles": list(roles),
            AGS_CLAIM: {"lineitems": ISS + "/api/lti/courses/7/line_items"}, **more}


def test_the_kits_config_logs_in_through_the_lms_when_lti_json_is_there(tmp_path):
    import shutil

    c, _ = load_config(tmp_path, "local", {}, set())
    assert c.JupyterHub.authenticator_class == "pam"            # without lti.json: as before
    shutil.copy(settings_file(tmp_path), tmp_path / "lti.json")
    c, _ = load_config(tmp_path, "local", {}, set())
    from ltiauthenticator.lti13.auth import LTI13Authenticator

    cls = c.JupyterHub.authenticator_class
    assert issubclass(cls, LTI13Authenticator)
    a = c.LTI13Authenticator
    assert (a.issuer, a.client_id, a.jwks_endpoint) == (ISS, {"10000000000042"}, ISS + "/api/lti/security/jwks")
    assert c.Authenticator.enable_auth_state and c.Authenticator.manage_groups
    key = tmp_path / "jupyterhub_crypt_key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and c.CryptKeeper["keys"] == [bytes.fromhex(key.read_text())]


def authenticator(tmp_path, home=None):
    site = {"state_dir": str(tmp_path), "instructors_group": "roofline-instructors",
            "students_group": "roofline-students", "course_id": "roofline"}
    cls = lti.make_authenticator(lti.load_settings(settings_file(tmp_path)), site)
    return cls(), tmp_path / "lti" / "launches.jsonl"


def launch(auth, data):
    handler = types.SimpleNamespace(hub=types.SimpleNamespace(base_url="/hub/"))
    return asyncio.run(auth.authenticate(handler, data)), handler


def test_a_launch_makes_a_stable_valid_user_in_the_right_group_and_is_recorded(tmp_path):
    auth, record = authenticator(tmp_path)
    student, _ = launch(auth, claims("s-1", email="Zoë.O'Brien+roof@uni.example"))
    assert lti.NAME.fullmatch(student["name"]) and USER.fullmatch(student["name"])
    assert student["name"].startswith("zoeobrienroof-") and student["groups"] == ["roofline-students"]
    assert student["auth_state"]["sub"] == "s-1"
    # the e-mail changes in the LMS: still the same hub user
    again, _ = launch(auth, claims("s-1", email="zoe.new@uni.example"))
    assert again["name"] == student["name"]
    ta, _ = launch(auth, claims("t-1", roles=["http://purl.imsglobal.org/vocab/lis/v2/membership#TeachingAssistant"]))
    prof, _ = launch(auth, claims("p-1", roles=[INSTRUCTOR], given_name="Grace"))
    assert ta["groups"] == prof["groups"] == ["roofline-instructors"] and prof["name"].startswith("grace-")
    assert len({student["name"], ta["name"], prof["name"]}) == 3
    # what export --lms reads back: students only, with their LMS id and the course's line items
    r = roster.read(record, ISS, "7:abc")
    assert r.lms_id == {student["name"]: "s-1"} and r.lineitems_url == ISS + "/api/lti/courses/7/line_items"


def test_a_launch_of_another_deployment_is_refused(tmp_path):
    from ltiauthenticator.lti13.error import LoginError

    auth, record = authenticator(tmp_path)
    with pytest.raises(LoginError, match="deployment"):
        launch(auth, {**claims("s-1"), DEPLOYMENT_CLAIM: "other"})
    assert not record.exists()


def test_an_assignment_link_opens_its_lesson(tmp_path, monkeypatch):
    auth, _ = authenticator(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setattr(lti.pwd, "getpwnam", lambda name: types.SimpleNamespace(pw_dir=str(home)))
    monkeypatch.setattr(lti, "_unix_user_exists", lambda name: False)
    _, h = launch(auth, claims("s-1", **{CUSTOM_CLAIM: {"lesson": "01_hello_roofline"}}))
    assert h.lesson_url == "/hub/user-redirect/lab/tree/roofline"          # not fetched: the course folder
    (home / "roofline" / "01_hello_roofline").mkdir(parents=True)
    _, h = launch(auth, claims("s-1", **{LTI + "target_link_uri": "https://hub/hub/?lesson=01_hello_roofline"}))
    assert h.lesson_url == "/hub/user-redirect/lab/tree/roofline/01_hello_roofline"
    for bad in ("../../etc", "a/b", "", "x" * 200):
        _, h = launch(auth, claims("s-1", **{CUSTOM_CLAIM: {"lesson": bad}}))
        assert h.lesson_url is None


def test_a_name_another_lms_user_or_a_unix_user_holds_is_not_given_twice(tmp_path, monkeypatch):
    auth, record = authenticator(tmp_path)
    first = lti.derive_name(ISS, "s-2", {"given_name": "Ada"})
    # someone else got that name first (a collision of the 6 digits, or a machine's own user)
    lti.append_record(record, {"user": first, "iss": ISS, "sub": "someone-else"})
    monkeypatch.setattr(lti, "_unix_user_exists", lambda name: name == lti.derive_name(ISS, "s-2", {"given_name": "Ada"}, {first}))
    ada, _ = launch(auth, claims("s-2", given_name="Ada"))
    assert ada["name"] not in {first, lti.derive_name(ISS, "s-2", {"given_name": "Ada"}, {first})}
    assert lti.NAME.fullmatch(ada["name"]) and ada["name"].startswith("ada-")
    again, _ = launch(auth, claims("s-2", given_name="Ada"))
    assert again["name"] == ada["name"]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["given_name", "email", "name"]), st.text(max_size=80)), st.text(min_size=1))
def test_every_name_is_a_valid_unix_and_course_name(data, sub):
    name = lti.derive_name(ISS, sub, data)
    assert lti.NAME.fullmatch(name) and USER.fullmatch(name) and len(name) <= 32


def test_an_institution_instructor_who_is_a_learner_in_this_course_is_a_student(tmp_path):
    """Issue 44: a Learner of this course holding an institution-level Instructor role (they teach
    elsewhere) became an instructor and joined the key group. Only context roles count."""
    auth, _ = authenticator(tmp_path)
    institution = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"
    system = "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"
    learner, _ = launch(auth, claims("l-1", roles=[LEARNER, institution, system]))
    assert learner["groups"] == ["roofline-students"]
    assert not lti.is_instructor([institution]) and not lti.is_instructor([system])
    # the same person made an instructor of this course is one
    teacher, _ = launch(auth, claims("l-2", roles=[institution, INSTRUCTOR]))
    assert teacher["groups"] == ["roofline-instructors"]
    assert lti.is_instructor(["Instructor"]) and not lti.is_instructor("Instructor")   # a claim is a list
