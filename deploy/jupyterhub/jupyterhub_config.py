"""JupyterHub for the roofline course on one machine.

setup.sh installs this file into the hub's configuration folder (/etc/jupyterhub) next to
roofline_site.json, which holds this machine's paths and names; both are rewritten when setup.sh
runs again. Put your own changes in jupyterhub_config.local.py in the same folder (loaded last,
never touched by setup.sh): the authenticator of your institution, HTTPS, limits.

Every user is a Unix user (nbgrader files a submission under its Unix user name); each single-user
server runs as that user from the shared environment, in the user's home.
"""
import grp
import json
import os
import pwd

c = get_config()  # noqa: F821 (provided by JupyterHub)

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "roofline_site.json")) as f:
    site = json.load(f)
ENV = site["env"]

# ---- network -----------------------------------------------------------------------------------
# Where users connect. For a real term put HTTPS in front (ssl_cert/ssl_key below, or a reverse
# proxy such as nginx or Caddy that terminates TLS): passwords must not travel in clear text.
c.JupyterHub.bind_url = site["bind_url"]
# c.JupyterHub.ssl_cert = "/etc/letsencrypt/live/hub.example.edu/fullchain.pem"
# c.JupyterHub.ssl_key = "/etc/letsencrypt/live/hub.example.edu/privkey.pem"
# The hub's own API and the proxy's API stay on the loopback interface, on this install's ports
# (setup.sh --hub-api-port, --proxy-api-port: two installs on one machine each have their own).
c.JupyterHub.hub_bind_url = site["hub_api_url"]
c.ConfigurableHTTPProxy.api_url = site["proxy_api_url"]
# the proxy installed inside this install's prefix (npm --prefix), not one of the machine's
c.ConfigurableHTTPProxy.command = [site["proxy"]]

# ---- state ---------------------------------------------------------------------------------------
c.JupyterHub.db_url = "sqlite:///" + os.path.join(site["state_dir"], "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(site["state_dir"], "jupyterhub_cookie_secret")

# ---- authentication: PLACEHOLDER -------------------------------------------------------------------
# PAM checks the machine's own Unix passwords (set them with `passwd USER`): it works on one
# machine as is. For a real course replace it with your institution's single sign-on in
# jupyterhub_config.local.py, keeping one Unix user per student, e.g. (pip install oauthenticator)
#     c.JupyterHub.authenticator_class = "generic-oauth"   # + its client id, secret, URLs
#     c.Authenticator.allowed_users = {...}                # the roster
# Only members of the course's two groups (setup.sh --student / --instructor) may log in.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {site["students_group"], site["instructors_group"]}
# Opening a PAM session (utmp, systemd-logind) is not needed for a notebook server.
c.PAMAuthenticator.open_sessions = False
#
# TEST / TRIAL ONLY -- never on a hub with real students: one shared password for every name.
#     c.JupyterHub.authenticator_class = "shared-password"
#     c.SharedPasswordAuthenticator.user_password = "at-least-8-characters"
#     c.Authenticator.allowed_users = {"alice", "bob"}   # each still a Unix user
# (The end-to-end test, tests/test_hub.py, does not need it: it logs in through PAM with
# throw-away Unix users.)

# ---- the single-user servers ----------------------------------------------------------------------
def _members(group: str) -> set:
    try:
        g = grp.getgrnam(group)
    except KeyError:
        return set()
    return set(g.gr_mem) | {p.pw_name for p in pwd.getpwall() if p.pw_gid == g.gr_gid}


# Per-student limits (setup.sh --memory-limit/--tasks-limit/--cpu-limit), so that one student's
# runaway notebook (a memory or fork bomb) leaves the hub and the other students working.
# Instructors are not limited: grading runs many sandboxed kernels at once.
LIMITS = site.get("limits") or {}


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = str(text).strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


if LIMITS and site.get("spawner") == "systemd":
    # systemd runs here: each server is a transient unit in its own cgroup (memory and tasks for
    # the whole server with everything it starts, a CPU quota)
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
    c.SystemdSpawner.mem_limit = LIMITS["memory"]
    c.SystemdSpawner.cpu_limit = float(LIMITS["cpu"])
    c.SystemdSpawner.unit_extra_properties = {"TasksMax": str(LIMITS["tasks"])}
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.disable_user_sudo = True
elif LIMITS:
    import resource

    from jupyterhub.spawner import LocalProcessSpawner

    class LimitedLocalProcessSpawner(LocalProcessSpawner):
        """The local spawner with kernel limits on every student's processes, set before the
        server drops to the student's uid and inherited by everything it starts:
        RLIMIT_NPROC (the student's processes and threads, all counted together per user: a fork
        bomb stops there), RLIMIT_DATA (each process's heap and private memory: a memory bomb
        gets a MemoryError; unlike RLIMIT_AS it does not count the address space that
        thread-heavy libraries reserve without using) and a lower scheduling priority (nice), so
        the hub and the proxy stay responsive however busy the students' processes are."""

        def make_preexec_fn(self, name):
            drop = super().make_preexec_fn(name)
            if name in _members(site["instructors_group"]):
                return drop
            memory, tasks, nice = _bytes(LIMITS["memory"]), int(LIMITS["tasks"]), int(LIMITS["nice"])

            def preexec():
                resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
                resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
                os.nice(nice)
                drop()

            return preexec

    c.JupyterHub.spawner_class = LimitedLocalProcessSpawner
else:
    c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [os.path.join(ENV, "bin", "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~"
# The shared environment first on PATH (terminals, `python -m autograder`, `nbgrader`), and none
# of the hub's own environment (root's PATH, PYTHONPATH) passed on.
c.Spawner.env_keep = ["LANG", "LC_ALL"]
c.Spawner.environment = {"PATH": f"{ENV}/bin:/usr/local/bin:/usr/bin:/bin"}
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60


# Every student their own numbers (course_lib.questions.variants): with the course's variant
# secret here (root only, 0600: copy the instructor's <course>/.autograder/variant-secret), each
# student's server is told the student's own variant key, never the secret.
VARIANT_SECRET = site.get("variant_secret") or os.path.join(HERE, "roofline_variant_secret")


def variant_env(name: str) -> dict:
    """The variables that give `name` their own numbers ({} without a secret: the lesson's own)."""
    try:
        with open(VARIANT_SECRET, "rb") as f:
            secret = f.read().strip()
    except OSError:
        return {}
    from course_lib.questions.variants import KEY_ENV, STUDENT_ENV, student_key

    return {STUDENT_ENV: name, KEY_ENV: student_key(secret, name)}


def open_the_course(spawner):
    """Open each user's server in the course: an instructor in their course checkout, a student
    in ~/<course id>/, where the Assignment List fetches assignments (created here if missing,
    owned by the student)."""
    name = spawner.user.name
    user = pwd.getpwnam(name)
    if name in _members(site["instructors_group"]):
        spawner.default_url = "/lab/tree/" + site["course_folder"]
        if site.get("spawner") == "systemd" and LIMITS:    # instructors are not limited
            spawner.mem_limit, spawner.cpu_limit, spawner.unit_extra_properties = None, None, {}
        return
    folder = os.path.join(user.pw_dir, site["course_id"])
    try:
        os.mkdir(folder, 0o755)
    except FileExistsError:
        pass
    else:
        os.chown(folder, user.pw_uid, user.pw_gid, follow_symlinks=False)
    spawner.default_url = "/lab/tree/" + site["course_id"]
    spawner.environment = {**spawner.environment, **variant_env(name)}
    hand_the_service_the_secret()          # the truths the service shows are of this student's numbers
    if site.get("student_site"):
        # the students' copy of course_lib, without the answer key (the environment's own is
        # readable only by the instructors and the course service): verify cells ask the service
        spawner.environment["PYTHONPATH"] = site["student_site"]


c.Spawner.pre_spawn_hook = open_the_course

# ---- the course service: the prediction ledger and the answer key ------------------------------------
# A copy of every student's prediction record the student cannot write (the course service,
# course_hub.service, which keeps it in <ledger dir>/ledger/), and the answer key: a verify cell
# asks the service for the truth of the student's own numbers, which it records as revealed first.
# a service the hub starts as its own Unix user (setup.sh --ledger-user), on 127.0.0.1, appending to
# files only that user writes (the instructors' group reads them). Each student's kernel posts its
# commits and reveals there with the student's own hub token (course_lib.ledger: it finds the URL in
# COURSE_SERVICE_URL); `python -m autograder grade --ledger DIR` checks the records against it.
LEDGER = site.get("ledger") or {}


def hand_the_service_the_secret() -> None:
    """The course secret, copied where the course service (its own user) reads it: at start and
    at every spawn, so a secret the admin adds reaches the service without a restart."""
    if not LEDGER:
        return
    target = os.path.join(LEDGER["dir"], "variant-secret")
    try:
        with open(VARIANT_SECRET, "rb") as f:
            secret = f.read()
    except OSError:
        return
    try:
        with open(target, "rb") as f:
            if f.read() == secret:
                return
    except OSError:
        pass
    service = pwd.getpwnam(LEDGER["user"])
    fd = os.open(target + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o400)
    with os.fdopen(fd, "wb") as f:
        f.write(secret)
    os.chown(target + ".new", service.pw_uid, service.pw_gid)
    os.chmod(target + ".new", 0o400)
    os.replace(target + ".new", target)


if LEDGER:
    hand_the_service_the_secret()
    LEDGER_SERVICE = "course"
    c.JupyterHub.services.append({
        "name": LEDGER_SERVICE, "url": LEDGER["url"], "user": LEDGER["user"], "cwd": LEDGER["dir"],
        "display": False,
        "command": [os.path.join(ENV, "bin", "python"), "-m", "course_hub.service", "--store", LEDGER["dir"],
                    "--instructors-group", site["instructors_group"]]
                   + (["--answer-key", "--secret-file", os.path.join(LEDGER["dir"], "variant-secret")]
                      if site.get("student_site") else []),
    })
    # users (and the token their server and kernels hold) may call the ledger; by default a user's
    # token reaches no service
    ACCESS = f"access:services!service={LEDGER_SERVICE}"
    c.JupyterHub.load_roles.append({"name": "user", "scopes": ["self", ACCESS]})
    c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", ACCESS]
    c.Spawner.environment = {**c.Spawner.environment, "COURSE_SERVICE_URL": LEDGER["url"]}

# ---- the idle culler ---------------------------------------------------------------------------------
# A server nobody used for cull_idle seconds (setup.sh --cull-idle, default 3600; 0: never) is
# stopped, with its kernels and terminals (jupyterhub-idle-culler, a service of the hub's). The
# user's files stay; their next login starts it again. It checks every quarter of that time, at
# most every 5 minutes.
CULL_IDLE = int(site["cull_idle"])
if CULL_IDLE:
    c.JupyterHub.services.append({
        "name": "idle-culler",
        # (course_hub.idle_culler: the culler, stopped by the hub's SIGINT even where it started
        # with SIGINT ignored)
        "command": [os.path.join(ENV, "bin", "python"), "-m", "course_hub.idle_culler",
                    f"--timeout={CULL_IDLE}", f"--cull-every={max(5, min(300, CULL_IDLE // 4))}"],
    })
    c.JupyterHub.load_roles.append({
        "name": "idle-culler", "services": ["idle-culler"],
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    })

# ---- LMS login (LTI 1.3, issue 35): setup.sh --lti-config FILE installs lti.json ---------------
# Users then come from Canvas or Moodle; the logic is course_hub.lti's (deploy/lti.md).
_lti = os.path.join(HERE, "lti.json")
if os.path.exists(_lti):
    from course_hub import lti

    lti.configure(c, _lti, site)

# ---- local changes --------------------------------------------------------------------------------
_local = os.path.join(HERE, "jupyterhub_config.local.py")
if os.path.exists(_local):
    load_subconfig(_local)  # noqa: F821
