#!/usr/bin/env bash
# Set up (or bring up to date) a one-machine JupyterHub for the roofline course. Run as root:
#
#   sudo deploy/jupyterhub/setup.sh --instructor alice --student bob --student carol
#
# Every step checks before it acts, so running it again changes nothing that is already right
# (add students later by running it again with more --student flags). What it does, in order:
#   1. OS packages: bubblewrap (grading sandbox), node + npm, python3-venv (apt, only if missing)
#   2. configurable-http-proxy from npm (only if missing)
#   3. the shared environment PREFIX/env: jupyterhub + this course's package with its `course`
#      extra, installed from this checkout (not editable; course_hub, the ledger service and the
#      students' Assignment List, is in it); rebuilt only when the sources change
#   4. nbgrader for everyone (PREFIX/env/etc/jupyter/nbgrader_config.py: exchange, course id)
#      and the instructor-side nbgrader extensions switched off for everyone
#   5. the exchange directory with nbgrader's documented permissions (1777)
#   6. new home folders 0700 (login.defs, adduser.conf); students and instructors as Unix users
#      in their groups, homes 0700; each instructor gets the course and the instructor tools
#   7. the hub's configuration (CONFIG_DIR) and state directory; a systemd unit where systemd runs;
#      per-student limits (memory, processes, CPU) for the single-user servers
#   8. the shared environment on every user's PATH in login shells (JupyterLab's terminals):
#      /etc/profile.d/roofline-course.sh
#   9. the course service (course_hub.service: the prediction ledger and the answer key): a system
#      user that alone writes LEDGER_DIR (the instructors' group reads it); the hub runs the service
#      as that user (jupyterhub_config.py). The answer key stays out of students' reach: the
#      environment's course_lib is readable only by KEY_GROUP (instructors and the service), and
#      students' servers import a copy without solvers (PREFIX/student-site, PYTHONPATH)
# See deploy/jupyterhub/README.md.
set -euo pipefail
umask 022
# the caller's Python settings must not decide what the environment imports (a PYTHONPATH to a
# checkout would put that checkout's course_lib before the environment's)
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE

KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$(cd "$KIT/../.." && pwd)"          # the course checkout this script belongs to
COURSE_ID=roofline

PREFIX=/opt/roofline
EXCHANGE=/srv/nbgrader/exchange
CONFIG_DIR=/etc/jupyterhub
STATE_DIR=/var/lib/jupyterhub
PYTHON=/usr/bin/python3
BIND_URL="http://:8000"
COURSE_FOLDER=roofline-course           # the instructor's course checkout, in their home
STUDENTS_GROUP=roofline-students
INSTRUCTORS_GROUP=roofline-instructors
SERVICE=auto
MEMORY_LIMIT=4G                         # per student process (local spawner), per server (systemd)
TASKS_LIMIT=512                         # processes + threads per student
CPU_LIMIT=2                             # cores per student server (systemd); local spawner: nice
NICE=10
PROFILE_D=/etc/profile.d/roofline-course.sh
LEDGER_DIR=/var/lib/roofline-ledger      # the prediction ledger's files (course_hub.service)
LEDGER_URL=http://127.0.0.1:8790        # where the ledger service listens (loopback only)
LEDGER_USER=roofline-ledger             # the system user the service runs as: the only writer
KEY_GROUP=roofline-key                  # who may read the answer key (course_lib's solvers): instructors, the service
LEDGER=yes
SERVICE_EXCHANGE=yes                    # the course service is the nbgrader exchange (no: the folder EXCHANGE)
INSTRUCTORS=()
STUDENTS=()
LTI_CONFIG=""                           # issue 35: log in from the LMS (LTI 1.3), see deploy/lti.md
# nbgrader's instructor side: off for everyone, on for instructors; autograder.outputs.formgrader_csp serves
# the Formgrader's pages with a policy that runs only the Formgrader's own scripts
INSTRUCTOR_SERVER_EXTENSIONS=(nbgrader.server_extensions.formgrader nbgrader.server_extensions.course_list
                              autograder.outputs.formgrader_csp)
INSTRUCTOR_LAB_PLUGINS=(@jupyter/nbgrader:formgrader @jupyter/nbgrader:create-assignment @jupyter/nbgrader:course-list)

usage() {
    cat <<EOF
usage: sudo $0 [options]
  --instructor USER        an instructor (repeatable): Unix user, course in ~USER/$COURSE_FOLDER
  --student USER           a student (repeatable): Unix user in the students' group
  --prefix DIR             shared environment goes to DIR/env        (default $PREFIX)
  --exchange DIR           nbgrader exchange                         (default $EXCHANGE)
  --config-dir DIR         the hub's configuration                   (default $CONFIG_DIR)
  --state-dir DIR          the hub's database and cookie secret      (default $STATE_DIR)
  --python PATH            interpreter for the environment; must be readable by every user
                           (default $PYTHON)
  --bind-url URL           where the hub listens                     (default $BIND_URL)
  --course-folder NAME     the instructors' course folder in their home (default $COURSE_FOLDER)
  --students-group NAME    (default $STUDENTS_GROUP)
  --instructors-group NAME (default $INSTRUCTORS_GROUP)
  --memory-limit SIZE      memory per student: per process on the local spawner, per server
                           with systemd (e.g. 2G; 0 = no limits at all) (default $MEMORY_LIMIT)
  --tasks-limit N          processes + threads per student              (default $TASKS_LIMIT)
  --cpu-limit CORES        CPU cores per student server (systemd only; the local spawner runs
                           students at nice $NICE instead)                  (default $CPU_LIMIT)
  --ledger-dir DIR         the prediction ledger's files              (default $LEDGER_DIR)
  --ledger-url URL         where the ledger service listens, http://127.0.0.1:PORT
                                                                     (default $LEDGER_URL)
  --ledger-user NAME       the system user the ledger service runs as (default $LEDGER_USER)
  --key-group NAME         who may read the answer key: the instructors and the service
                                                                     (default $KEY_GROUP)
  --no-ledger              no course service: no prediction ledger (grading then says "not
                           vouched") and the answer key in students' kernels
  --exchange-folder        nbgrader's own folder exchange (EXCHANGE) instead of the course
                           service's (which needs the service: not with --no-ledger)
  --no-service             do not install the systemd unit
  --lti-config FILE        students and instructors log in from the LMS (LTI 1.3): FILE becomes
                           CONFIG_DIR/lti.json (deploy/lti.md)
EOF
}

die() { echo "setup.sh: $*" >&2; exit 1; }

server_extensions_json() {   # server_extensions_json true|false: the instructor-side server extensions
    local sep=""
    printf '{"ServerApp": {"jpserver_extensions": {'
    for ext in "${INSTRUCTOR_SERVER_EXTENSIONS[@]}"; do printf '%s"%s": %s' "$sep" "$ext" "$1"; sep=", "; done
    printf '}}}\n'
}

lab_plugins_json() {   # lab_plugins_json true|false: the instructor-side lab plugins disabled or not
    local sep=""
    printf '{"disabledExtensions": {'
    for ext in "${INSTRUCTOR_LAB_PLUGINS[@]}"; do printf '%s"%s": %s' "$sep" "$ext" "$1"; sep=", "; done
    # never locked: an instructor's own page_config.json must be able to switch them back on
    printf '}, "lockedExtensions": {'
    sep=""
    for ext in "${INSTRUCTOR_LAB_PLUGINS[@]}"; do printf '%s"%s": false' "$sep" "$ext"; sep=", "; done
    printf '}}\n'
}

# json_merge FILE: merge the JSON object on stdin into FILE (created if missing), keeping the rest
JSON_MERGE='
import json, os, sys
path = sys.argv[1]
patch = json.load(sys.stdin)
data = json.load(open(path)) if os.path.exists(path) else {}
def merge(a, b):
    for k, v in b.items():
        a[k] = merge(a.get(k, {}), v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return a
with open(path + ".new", "w") as f:
    json.dump(merge(data, patch), f, indent=2)
    f.write("\n")
os.replace(path + ".new", path)
'
json_merge() { "$ENV/bin/python" -c "$JSON_MERGE" "$1"; }
say() { echo "== $*"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --instructor) INSTRUCTORS+=("$2"); shift 2 ;;
        --student) STUDENTS+=("$2"); shift 2 ;;
        --prefix) PREFIX="$2"; shift 2 ;;
        --exchange) EXCHANGE="$2"; shift 2 ;;
        --config-dir) CONFIG_DIR="$2"; shift 2 ;;
        --state-dir) STATE_DIR="$2"; shift 2 ;;
        --python) PYTHON="$2"; shift 2 ;;
        --bind-url) BIND_URL="$2"; shift 2 ;;
        --course-folder) COURSE_FOLDER="$2"; shift 2 ;;
        --students-group) STUDENTS_GROUP="$2"; shift 2 ;;
        --instructors-group) INSTRUCTORS_GROUP="$2"; shift 2 ;;
        --memory-limit) MEMORY_LIMIT="$2"; shift 2 ;;
        --tasks-limit) TASKS_LIMIT="$2"; shift 2 ;;
        --cpu-limit) CPU_LIMIT="$2"; shift 2 ;;
        --ledger-dir) LEDGER_DIR="$2"; shift 2 ;;
        --ledger-url) LEDGER_URL="$2"; shift 2 ;;
        --ledger-user) LEDGER_USER="$2"; shift 2 ;;
        --key-group) KEY_GROUP="$2"; shift 2 ;;
        --no-ledger) LEDGER=no; SERVICE_EXCHANGE=no; shift ;;
        --exchange-folder) SERVICE_EXCHANGE=no; shift ;;
        --no-service) SERVICE=no; shift ;;
        --lti-config) LTI_CONFIG="$2"; shift 2 ;;   # LTI 1.3 login (course_hub.lti, deploy/lti.md)
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done

[[ $(id -u) -eq 0 ]] || die "run me as root (sudo): I create users, groups and system directories"
# The paths end up in Python and JSON files: keep them plain.
for p in "$PREFIX" "$EXCHANGE" "$CONFIG_DIR" "$STATE_DIR" "$PYTHON" "$LEDGER_DIR"; do
    [[ "$p" =~ ^/[A-Za-z0-9._/+-]*$ ]] || die "$p: expected an absolute path of letters, digits and . _ / + -"
done
[[ "$COURSE_FOLDER" =~ ^[A-Za-z0-9._+-]+$ ]] || die "--course-folder $COURSE_FOLDER: expected a plain folder name"
for u in "${INSTRUCTORS[@]}" "${STUDENTS[@]}" "$STUDENTS_GROUP" "$INSTRUCTORS_GROUP" "$LEDGER_USER" "$KEY_GROUP"; do
    [[ "$u" =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "$u: expected a Unix user/group name (lower case, digits, _ -)"
done
[[ "$MEMORY_LIMIT" =~ ^[0-9]+[KMGT]?$ ]] || die "--memory-limit $MEMORY_LIMIT: expected a size such as 2G or 512M"
[[ "$TASKS_LIMIT" =~ ^[1-9][0-9]*$ ]] || die "--tasks-limit $TASKS_LIMIT: expected a whole number of processes"
[[ "$LEDGER_URL" =~ ^http://127\.0\.0\.1:[0-9]{1,5}$ ]] || die "--ledger-url $LEDGER_URL: expected http://127.0.0.1:PORT (the ledger listens on the loopback interface only)"
[[ "$CPU_LIMIT" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--cpu-limit $CPU_LIMIT: expected a number of cores such as 1.5"
ENV="$PREFIX/env"
STUDENT_SITE="$PREFIX/student-site"     # students' course_lib: no solvers (autograder.authoring.student_build)
# where systemd runs, each student's server is a systemd unit with cgroup limits (systemdspawner)
SPAWNER=local
[[ -d /run/systemd/system && "$MEMORY_LIMIT" != 0 ]] && SPAWNER=systemd

# ---- 1. OS packages ------------------------------------------------------------------------------
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
"$PYTHON" -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv)
if [[ ${#missing[@]} -gt 0 ]]; then
    say "installing ${missing[*]} (apt)"
    command -v apt-get >/dev/null || die "please install ${missing[*]} (no apt-get here)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
bwrap --ro-bind / / --unshare-all true || die "bubblewrap is installed but cannot start a sandbox here"

# ---- 2. configurable-http-proxy -------------------------------------------------------------------
if ! command -v configurable-http-proxy >/dev/null; then
    say "installing configurable-http-proxy (npm, global)"
    npm install --global --no-fund --no-audit configurable-http-proxy@5
fi
CHP="$(command -v configurable-http-proxy)"

# ---- 3. the shared environment ----------------------------------------------------------------------
# Students' servers run this Python: it must not live under a private directory (e.g. /root/.pyenv).
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10)' || die "$PYTHON: Python 3.10 or newer needed"
if [[ ! -x "$ENV/bin/python" ]]; then
    say "creating the shared environment $ENV"
    mkdir -p "$PREFIX"
    "$PYTHON" -m venv "$ENV"
    "$ENV/bin/python" -m pip install --quiet --upgrade pip
fi
# Rebuild only when what goes into it changed: the package sources (the course's JupyterLab
# extension in course_lib/labextension/ among them) and this list.
REQUIREMENTS=("jupyterhub>=5" "$SRC[course]")
[[ "$SPAWNER" == systemd ]] && REQUIREMENTS+=("jupyterhub-systemdspawner>=1")
REQUIREMENTS+=("pylti1p3>=2,<3" "jupyterhub-ltiauthenticator>=1.6.3,<2")   # pyproject's `lms` extra (issue 35)
stamp="$(cd "$SRC" && { printf '%s\n' "${REQUIREMENTS[@]}";
                          find pyproject.toml course_lib autograder course_hub -type f \
                               \( -name '*.py' -o -name '*.toml' -o -name '*.md' -o -name '*.json' -o -name '*.js' \) \
                               -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum; } \
                        | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$ENV/.roofline-stamp" 2>/dev/null)" != "$stamp" ]]; then
    say "installing jupyterhub and the course package into $ENV (log: $PREFIX/pip.log)"
    {
        "$ENV/bin/python" -m pip install "${REQUIREMENTS[@]}" &&
        # same version number, new sources: pip would keep the old copy unless told
        "$ENV/bin/python" -m pip install --no-deps --force-reinstall "$SRC"
    } > "$PREFIX/pip.log" 2>&1 || { tail -n 30 "$PREFIX/pip.log" >&2; die "pip failed (see $PREFIX/pip.log)"; }
    echo "$stamp" > "$ENV/.roofline-stamp"
else
    say "shared environment $ENV is up to date"
fi
if [[ "$LEDGER" == yes && "$(cat "$STUDENT_SITE/.roofline-stamp" 2>/dev/null)" != "$stamp" ]]; then
    say "writing the students' copy of course_lib, without the answer key, to $STUDENT_SITE"
    (cd / && "$ENV/bin/python" -m autograder.authoring.student_build "$STUDENT_SITE") >> "$PREFIX/pip.log" 2>&1 \
        || { tail -n 30 "$PREFIX/pip.log" >&2; die "the students' copy failed (see $PREFIX/pip.log)"; }
    echo "$stamp" > "$STUDENT_SITE/.roofline-stamp"
fi
chmod -R go+rX,go-w "$PREFIX"
# The answer key: the environment's course_lib only for KEY_GROUP (instructors and the service);
# everyone else imports the students' copy. Done again on every run (pip and chmod above reopen it).
# (from /: `python -c` imports from the working directory first, which may be a checkout)
KEY_SITE="$(cd / && "$ENV/bin/python" -c 'import course_lib, os; print(os.path.dirname(course_lib.__file__))')"
[[ "$KEY_SITE" == "$ENV"/* ]] || die "$ENV imports course_lib from $KEY_SITE, not its own copy (an editable install?): reinstall it"
if [[ "$LEDGER" == yes ]]; then
    getent group "$KEY_GROUP" >/dev/null || groupadd --system "$KEY_GROUP"
    chgrp "$KEY_GROUP" "$KEY_SITE"
    chmod 0750 "$KEY_SITE"
    (cd / && runuser -u nobody -- env PYTHONPATH="$STUDENT_SITE" "$ENV/bin/python" -c "
import course_lib, nbgrader, jupyterhub
from course_lib.questions import all_questions
from course_lib.questions.key import KeyHeld
q = next(q for q in all_questions().values() if not q.measured)
try:
    q.solution()
except KeyHeld:
    pass
else:
    raise SystemExit('the students copy of course_lib solves ' + q.id)") \
        || die "$ENV with $STUDENT_SITE is not usable by other users, or holds the answer key (is $PYTHON under a private directory? pass --python)"
    if (cd / && runuser -u nobody -- "$ENV/bin/python" -c "import course_lib.questions" 2>/dev/null); then
        die "$KEY_SITE is readable by everyone: the answer key would be in students' kernels"
    fi
else
    chmod 0755 "$KEY_SITE"
    (cd / && runuser -u nobody -- "$ENV/bin/python" -c "import course_lib, nbgrader, jupyterhub") \
        || die "$ENV is not usable by other users (is $PYTHON under a private directory? pass --python)"
fi

# ---- 4. nbgrader for everyone; instructor-side extensions off ----------------------------------------
mkdir -p "$ENV/etc/jupyter/jupyter_server_config.d" "$ENV/etc/jupyter/labconfig"
sed -e "s|@EXCHANGE@|$EXCHANGE|g" -e "s|@COURSE_ID@|$COURSE_ID|g" -e "s|@SERVICE_EXCHANGE@|$SERVICE_EXCHANGE|g" \
    "$KIT/nbgrader_config.student.py" > "$ENV/etc/jupyter/nbgrader_config.py"
# Students keep Validate and the Assignment List; the Formgrader, Create Assignment and Courses
# (instructor tools) are switched off for everyone here and back on for each instructor (step 6).
# Written as JSON rather than with `jupyter labextension disable`, which also locks what it
# disables and so would stop an instructor's own settings from switching the tools back on.
server_extensions_json false > "$ENV/etc/jupyter/jupyter_server_config.d/roofline-hub.json"
lab_plugins_json true | json_merge "$ENV/etc/jupyter/labconfig/page_config.json"
# No "get notified about official Jupyter news?" prompt: the hub's users never fetch jupyter.org
mkdir -p "$ENV/share/jupyter/lab/settings"
echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' \
    | json_merge "$ENV/share/jupyter/lab/settings/overrides.json"
# The Formgrader is an iframe inside JupyterLab: the single-user server must allow its own pages
# to frame it (its default Content-Security-Policy, frame-ancestors 'none', leaves it blank;
# nbgrader #1870). Only this file is read for it: jupyter_server_config.d/ only toggles extensions.
echo '{"ServerApp": {"tornado_settings": {"headers": {"Content-Security-Policy": "frame-ancestors '"'self'"'"}}}}' \
    | json_merge "$ENV/etc/jupyter/jupyter_server_config.json"
# Lessons open unmodified: notebooks served with the kernel's language_info (course_lib.jupyter_contents)
json_merge "$ENV/etc/jupyter/jupyter_server_config.json" < "$SRC/deploy/student-jupyter/jupyter_server_config.json"

# ---- 5. the exchange ------------------------------------------------------------------------------
# nbgrader's layout: the root writable by everyone (sticky, so nobody removes another's files);
# the course's folder inside it belongs to the instructor (step 6).
mkdir -p "$EXCHANGE"
chown root:root "$EXCHANGE"
chmod 1777 "$EXCHANGE"

# ---- 6. users, groups, homes --------------------------------------------------------------------
# Homes created from now on are private (Debian's default is 0755).
# (Only the setting's own line, commented out or not, is touched: `#HOME_MODE 0700`, not the prose.)
if grep -qE '^#?HOME_MODE[[:space:]]+[0-7]+' /etc/login.defs 2>/dev/null; then
    sed -i -E 's/^#?HOME_MODE[[:space:]]+[0-7]+.*/HOME_MODE\t0700/' /etc/login.defs
elif [[ -f /etc/login.defs ]]; then
    printf 'HOME_MODE\t0700\n' >> /etc/login.defs
fi
if [[ -f /etc/adduser.conf ]]; then
    if grep -qE '^#?DIR_MODE=[0-7]+' /etc/adduser.conf; then
        sed -i -E 's/^#?DIR_MODE=[0-7]+.*/DIR_MODE=0700/' /etc/adduser.conf
    else
        echo "DIR_MODE=0700" >> /etc/adduser.conf
    fi
fi
for g in "$STUDENTS_GROUP" "$INSTRUCTORS_GROUP"; do
    getent group "$g" >/dev/null || groupadd "$g"
done

add_user() {   # add_user NAME GROUP: the user (created if missing), in GROUP, home 0700
    local name="$1" group="$2" home
    if ! id -u "$name" >/dev/null 2>&1; then
        useradd --create-home --user-group --shell /bin/bash "$name"
        say "created user $name"
    fi
    id -nG "$name" | tr ' ' '\n' | grep -qx "$group" || usermod -a -G "$group" "$name"
    home="$(getent passwd "$name" | cut -d: -f6)"
    [[ -d "$home" ]] || { mkdir -p "$home"; chown "$name:" "$home"; }
    chmod 0700 "$home"
}

for s in "${STUDENTS[@]}"; do
    add_user "$s" "$STUDENTS_GROUP"
done

copy_course() {   # copy_course DEST: the course's files (tracked and new, not git-ignored)
    local dest="$1"
    mkdir -p "$dest"
    if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$SRC" && git ls-files -z --cached --others --exclude-standard --deduplicate \
            | while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
            | tar --null -T - -cf -) | tar -C "$dest" -xf -
    else
        tar -C "$SRC" --exclude=.venv --exclude=.git -cf - . | tar -C "$dest" -xf -
    fi
}

as_user() {   # as_user NAME HOME COMMAND...: run COMMAND as NAME with a clean environment
    local name="$1" home="$2"; shift 2
    runuser -u "$name" -- env -i HOME="$home" USER="$name" LANG=C.UTF-8 \
        PATH="$ENV/bin:/usr/local/bin:/usr/bin:/bin" "$@"
}

for i in "${INSTRUCTORS[@]}"; do
    add_user "$i" "$INSTRUCTORS_GROUP"
    if [[ "$LEDGER" == yes ]]; then
        id -nG "$i" | tr ' ' '\n' | grep -qx "$KEY_GROUP" || usermod -a -G "$KEY_GROUP" "$i"
    fi
    home="$(getent passwd "$i" | cut -d: -f6)"
    course="$home/$COURSE_FOLDER"
    if [[ ! -e "$course" ]]; then
        say "copying the course to $course"
        copy_course "$course"
        chown -R "$i:" "$course"
    fi
    [[ -f "$course/nbgrader_config.py" ]] || die "$course has no nbgrader_config.py: is it the course?"
    # ~/.jupyter/nbgrader_config.py: the Formgrader and nbgrader's commands find the course
    cfg="$home/.jupyter/nbgrader_config.py"
    if [[ ! -e "$cfg" ]] || grep -q "managed by deploy/jupyterhub/setup.sh" "$cfg"; then
        as_user "$i" "$home" mkdir -p "$home/.jupyter"
        sed -e "s|@COURSE_DIR@|$course|g" "$KIT/nbgrader_config.instructor.py" \
            | as_user "$i" "$home" tee "$cfg" >/dev/null
    else
        echo "setup.sh: leaving $cfg alone (edited by hand); it must load $course/nbgrader_config.py" >&2
    fi
    # the instructor tools back on for this user (~/.jupyter overrides the environment's settings)
    as_user "$i" "$home" mkdir -p "$home/.jupyter/jupyter_server_config.d" "$home/.jupyter/labconfig"
    server_extensions_json true | as_user "$i" "$home" tee \
        "$home/.jupyter/jupyter_server_config.d/roofline-instructor.json" >/dev/null
    lab_plugins_json false | as_user "$i" "$home" "$ENV/bin/python" -c "$JSON_MERGE" \
        "$home/.jupyter/labconfig/page_config.json"
done

# The course's folder in the exchange belongs to the (first) instructor, with the modes
# `nbgrader release_assignment` would give it; made here so that no student can claim it first.
# The inbound is also sticky (1733): a student can add a submission but never remove or rename
# another's (nbgrader keeps the mode of an existing folder); `autograder collect --exchange`
# refuses a submission not owned by the student it names.
if [[ ${#INSTRUCTORS[@]} -gt 0 ]]; then
    cdir="$EXCHANGE/$COURSE_ID"
    owner="$(stat -c %U "$cdir" 2>/dev/null || echo root)"
    if [[ "$owner" == root ]]; then
        mkdir -p "$cdir/inbound" "$cdir/outbound" "$cdir/feedback"
        chown "${INSTRUCTORS[0]}:" "$cdir" "$cdir/inbound" "$cdir/outbound" "$cdir/feedback"
        chmod 0755 "$cdir" "$cdir/outbound"
        chmod 1733 "$cdir/inbound"
        chmod 0711 "$cdir/feedback"
    elif ! id -nG "$owner" | tr ' ' '\n' | grep -qx "$INSTRUCTORS_GROUP"; then
        die "$cdir belongs to $owner, who is not an instructor: inspect it, remove it, run me again"
    elif [[ -d "$cdir/inbound" && ! -L "$cdir/inbound" ]]; then
        chmod 1733 "$cdir/inbound"      # an exchange made by an earlier version: sticky now too
    fi
fi

# ---- 7. the hub --------------------------------------------------------------------------------------
mkdir -p "$CONFIG_DIR" "$STATE_DIR"
chmod 0700 "$STATE_DIR"

# ---- 9. the prediction ledger -----------------------------------------------------------------------
# Its own system user, the only one who writes the ledger: students cannot (not the owner, not in
# the group), instructors read it (group, setgid so every file gets the group); the service opens
# each file append-only, 0640.
if [[ "$LEDGER" == yes ]]; then
    if ! id -u "$LEDGER_USER" >/dev/null 2>&1; then
        useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
            "$LEDGER_USER"
        say "created the ledger's system user $LEDGER_USER"
    fi
    id -nG "$LEDGER_USER" | tr ' ' '\n' | grep -qx "$KEY_GROUP" || usermod -a -G "$KEY_GROUP" "$LEDGER_USER"
    mkdir -p "$LEDGER_DIR"
    chown "$LEDGER_USER:$INSTRUCTORS_GROUP" "$LEDGER_DIR"
    chmod 2750 "$LEDGER_DIR"
fi
install -m 0644 "$KIT/jupyterhub_config.py" "$CONFIG_DIR/jupyterhub_config.py"
# ---- LMS login (issue 35): --lti-config FILE becomes CONFIG_DIR/lti.json (root only); the hub then
# logs users in through the LMS (course_hub.lti; jupyterhub_config.py). Without it nothing changes.
if [[ -n "$LTI_CONFIG" ]]; then
    "$ENV/bin/python" -c 'import sys; from course_hub.lti import load_settings; load_settings(sys.argv[1])' \
        "$LTI_CONFIG" || die "--lti-config $LTI_CONFIG: not usable (see deploy/lti.md)"
    install -m 0600 "$LTI_CONFIG" "$CONFIG_DIR/lti.json"
fi
"$ENV/bin/python" - "$CONFIG_DIR/roofline_site.json" <<EOF
import json, sys
site = {
    "env": "$ENV", "exchange": "$EXCHANGE", "state_dir": "$STATE_DIR", "proxy": "$CHP",
    "bind_url": "$BIND_URL", "course_id": "$COURSE_ID", "course_folder": "$COURSE_FOLDER",
    "students_group": "$STUDENTS_GROUP", "instructors_group": "$INSTRUCTORS_GROUP",
    "spawner": "$SPAWNER",
    "ledger": {"dir": "$LEDGER_DIR", "url": "$LEDGER_URL", "user": "$LEDGER_USER"} if "$LEDGER" == "yes" else {},
    "student_site": "$STUDENT_SITE" if "$LEDGER" == "yes" else "",
    "limits": {} if "$MEMORY_LIMIT" == "0" else
              {"memory": "$MEMORY_LIMIT", "tasks": $TASKS_LIMIT, "cpu": $CPU_LIMIT, "nice": $NICE},
}
with open(sys.argv[1], "w") as f:
    json.dump(site, f, indent=2)
    f.write("\n")
EOF
chmod 0644 "$CONFIG_DIR/roofline_site.json"

# ---- 8. the shared environment on PATH in login shells --------------------------------------------
# JupyterLab's terminals are login shells, and Debian's /etc/profile sets PATH anew: without this,
# a terminal has no `python` (or the system's, without the course) and no `nbgrader`.
profile="# managed by deploy/jupyterhub/setup.sh: the course's shared environment first on PATH
case \":\$PATH:\" in
    *\":$ENV/bin:\"*) ;;
    *) PATH=\"$ENV/bin:\$PATH\"; export PATH ;;
esac"
if [[ "$LEDGER" == yes ]]; then
    # as in a student's server: everyone but the key's group imports the copy without the answer key
    profile+="
if ! id -nG 2>/dev/null | tr ' ' '\\n' | grep -qx '$KEY_GROUP'; then
    PYTHONPATH=\"$STUDENT_SITE\"; export PYTHONPATH
fi"
fi
if [[ "$(cat "$PROFILE_D" 2>/dev/null)" != "$profile" ]]; then
    printf '%s\n' "$profile" > "$PROFILE_D"
    chmod 0644 "$PROFILE_D"
fi

start="$ENV/bin/jupyterhub -f $CONFIG_DIR/jupyterhub_config.py"
if [[ "$SERVICE" == auto && -d /run/systemd/system ]]; then
    sed -e "s|@ENV@|$ENV|g" -e "s|@CONFIG_DIR@|$CONFIG_DIR|g" -e "s|@STATE_DIR@|$STATE_DIR|g" \
        "$KIT/jupyterhub.service" > /etc/systemd/system/jupyterhub.service
    systemctl daemon-reload
    systemctl enable --now jupyterhub.service
    say "hub running as the systemd service jupyterhub (after changes: systemctl restart jupyterhub)"
else
    say "start the hub with: cd $STATE_DIR && $start"
fi
if [[ "$BIND_URL" == http://* && ! "$BIND_URL" =~ ^http://(127\.0\.0\.1|localhost|\[::1\])(:|/|$) ]]; then
    say "NOTE: the hub serves plain HTTP on $BIND_URL: put HTTPS in front before a real term" \
        "(--bind-url http://127.0.0.1:8000 behind Caddy or nginx; see deploy/jupyterhub/README.md)"
fi
say "done: environment $ENV, exchange $EXCHANGE, hub config $CONFIG_DIR"
