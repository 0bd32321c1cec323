#!/usr/bin/env bash
# Set up (or bring up to date) a one-machine JupyterHub for the roofline course. Run as root:
#
#   sudo deploy/jupyterhub/setup.sh --instructor alice --student bob --student carol
#
# Every option is remembered in the install's CONFIG_DIR/setup.conf: add students later with
# `setup.sh --student dave` alone (the other options stay; a run prints each option it changes).
# Every step checks before it acts, so running it again changes nothing that is already right.
# `--show-config` prints the options, `--uninstall` removes the install. What it does, in order:
#   1. OS packages: bubblewrap (grading sandbox), node + npm, python3-venv (apt, only if missing)
#   2. configurable-http-proxy from npm into PREFIX/proxy (only if missing; nothing global)
#   3. the shared environment PREFIX/env: jupyterhub (--jupyterhub-version), jupyterhub-idle-culler
#      and this course's package with its `course`
#      extra, installed from this checkout (not editable; course_hub, the ledger service and the
#      students' Assignment List, is in it); rebuilt only when the sources change
#   4. nbgrader for everyone (PREFIX/env/etc/jupyter/nbgrader_config.py: exchange, course id)
#      and the instructor-side nbgrader extensions switched off for everyone
#   5. the exchange directory with nbgrader's documented permissions (1777)
#   6. students and instructors as Unix users in their groups, homes 0700 (useradd's HOME_MODE for
#      the users it makes: no machine-wide file is edited); each instructor gets the course (its
#      id in .autograder/course-id) and the instructor tools
#   7. the hub's configuration (CONFIG_DIR: its ports, the idle culler) and state directory; a
#      systemd unit (UNIT) where systemd runs; per-student limits (memory, processes, CPU)
#   8. the shared environment on PATH in the login shells (JupyterLab's terminals) of this
#      install's users only: /etc/profile.d/roofline-hub-COURSE_ID.sh
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

# ---- options --------------------------------------------------------------------------------------
# Every option is remembered in the install's own CONFIG_DIR/setup.conf: running setup.sh again
# with only --student (or any one option) keeps the rest, and says what it changed. An install is
# named by its configuration folder (--config-dir), or by its course id (--course-id ID: the
# folder defaults to /etc/jupyterhub-ID); a second install on the same machine gets its own.
# variable  option           default (the course id's in @...@ where it names the install)
OPTION_TABLE="
COURSE_ID        course-id          roofline
PREFIX           prefix             /opt/@ID@
EXCHANGE         exchange           /srv/nbgrader/exchange
STATE_DIR        state-dir          @STATE@
PYTHON           python             /usr/bin/python3
BIND_URL         bind-url           http://:8000
HUB_API_PORT     hub-api-port       8081
PROXY_API_PORT   proxy-api-port     8001
COURSE_FOLDER    course-folder      @ID@-course
STUDENTS_GROUP   students-group     @ID@-students
INSTRUCTORS_GROUP instructors-group @ID@-instructors
SERVICE          -                  auto
UNIT             unit               @UNIT@
MEMORY_LIMIT     memory-limit       4G
TASKS_LIMIT      tasks-limit        512
CPU_LIMIT        cpu-limit          2
CULL_IDLE        cull-idle          3600
JUPYTERHUB_VERSION jupyterhub-version >=5
LEDGER_DIR       ledger-dir         /var/lib/@ID@-ledger
LEDGER_URL       ledger-url         http://127.0.0.1:8790
LEDGER_USER      ledger-user        @ID@-ledger
KEY_GROUP        key-group          @ID@-key
LEDGER           -                  yes
SERVICE_EXCHANGE -                  yes
"
NICE=10                                 # the local spawner's students' scheduling priority
VARS=($(awk 'NF {print $1}' <<<"$OPTION_TABLE"))

declare -A GIVEN=()                     # what this run's flags set
INSTRUCTORS=()
STUDENTS=()
ACTION=install
CONFIG_DIR=""
LTI_CONFIG=""                           # issue 35: --lti-config FILE, installed as CONFIG_DIR/lti.json (kept by later runs)
# nbgrader's instructor side: off for everyone, on for instructors; autograder.outputs.formgrader_csp serves
# the Formgrader's pages with a policy that runs only the Formgrader's own scripts, and
# autograder.outputs.formgrader_guard takes out its buttons that bypass `python -m autograder`
INSTRUCTOR_SERVER_EXTENSIONS=(nbgrader.server_extensions.formgrader nbgrader.server_extensions.course_list
                              autograder.outputs.formgrader_csp autograder.outputs.formgrader_guard)
INSTRUCTOR_LAB_PLUGINS=(@jupyter/nbgrader:formgrader @jupyter/nbgrader:create-assignment @jupyter/nbgrader:course-list)

default_of() {   # default_of VAR: its default for this install's course id
    local d
    d="$(awk -v v="$1" '$1 == v {print $3}' <<<"$OPTION_TABLE")"
    local id="${COURSE_ID:-roofline}" state=/var/lib/jupyterhub unit=jupyterhub
    [[ "$id" != roofline ]] && { state="/var/lib/jupyterhub-$id"; unit="jupyterhub-$id"; }
    d="${d//@ID@/$id}"; d="${d//@STATE@/$state}"; d="${d//@UNIT@/$unit}"
    printf '%s' "$d"
}

usage() {
    cat <<EOF2
usage: sudo $0 [options]
Every option is remembered in CONFIG_DIR/setup.conf: a later run needs only what changes.
  --instructor USER        an instructor (repeatable): Unix user, course in ~USER/COURSE_FOLDER
  --student USER           a student (repeatable): Unix user in the students' group
  --config-dir DIR         the hub's configuration and this install's remembered options
                           (default /etc/jupyterhub; /etc/jupyterhub-ID with --course-id ID)
  --course-id ID           the course's id in nbgrader's exchange; it names the install's
                           defaults below (groups, ledger, unit, PATH file)   (default roofline)
  --prefix DIR             shared environment goes to DIR/env, the proxy to DIR/proxy
                                                                     (default /opt/ID)
  --exchange DIR           nbgrader exchange                         (default /srv/nbgrader/exchange)
  --state-dir DIR          the hub's database and cookie secret      (default /var/lib/jupyterhub,
                                                                      /var/lib/jupyterhub-ID)
  --python PATH            interpreter for the environment; must be readable by every user
                                                                     (default /usr/bin/python3)
  --jupyterhub-version SPEC  JupyterHub to install: a version (5.5.*, 6.1.1) or a pip
                           specifier (>=5)                           (default >=5)
  --bind-url URL           where the hub listens                     (default http://:8000)
  --hub-api-port N         the hub's own API, on 127.0.0.1           (default 8081)
  --proxy-api-port N       the proxy's API, on 127.0.0.1             (default 8001)
  --cull-idle SECONDS      stop a user's server idle this long (jupyterhub-idle-culler);
                           0: never                                  (default 3600)
  --course-folder NAME     the instructors' course folder in their home (default ID-course)
  --students-group NAME    (default ID-students)
  --instructors-group NAME (default ID-instructors)
  --memory-limit SIZE      memory per student: per process on the local spawner, per server
                           with systemd (e.g. 2G; 0 = no limits at all) (default 4G)
  --tasks-limit N          processes + threads per student              (default 512)
  --cpu-limit CORES        CPU cores per student server (systemd only; the local spawner runs
                           students at nice $NICE instead)                  (default 2)
  --ledger-dir DIR         the prediction ledger's files              (default /var/lib/ID-ledger)
  --ledger-url URL         where the ledger service listens, http://127.0.0.1:PORT
                                                                     (default http://127.0.0.1:8790)
  --ledger-user NAME       the system user the ledger service runs as (default ID-ledger)
  --key-group NAME         who may read the answer key: the instructors and the service
                                                                     (default ID-key)
  --no-ledger              no course service: no prediction ledger (grading then says "not
                           vouched") and the answer key in students' kernels
  --ledger                 the course service again (the default)
  --exchange-folder        nbgrader's own folder exchange (EXCHANGE) instead of the course
                           service's (which needs the service: not with --no-ledger)
  --service-exchange       the course service's exchange again (the default)
  --no-service             do not install the systemd unit
  --service                install the systemd unit where systemd runs (the default)
  --unit NAME              the systemd unit's name                   (default jupyterhub,
                                                                      jupyterhub-ID)
  --show-config            print the options this install would run with, change nothing
  --uninstall              stop the hub, remove what setup.sh installed (it says what it leaves)
  --lti-config FILE        students and instructors log in from the LMS (LTI 1.3): FILE becomes
                           CONFIG_DIR/lti.json, kept by later runs (deploy/lti.md)
EOF2
}

die() { echo "setup.sh: $*" >&2; exit 1; }
say() { echo "== $*"; }
need() { [[ $# -ge 2 ]] || die "$1 needs a value"; }

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

while [[ $# -gt 0 ]]; do
    case "$1" in
        --instructor) need "$@"; INSTRUCTORS+=("$2"); shift 2 ;;
        --student) need "$@"; STUDENTS+=("$2"); shift 2 ;;
        --config-dir) need "$@"; CONFIG_DIR="$2"; shift 2 ;;
        --course-id) need "$@"; GIVEN[COURSE_ID]="$2"; shift 2 ;;
        --prefix) need "$@"; GIVEN[PREFIX]="$2"; shift 2 ;;
        --exchange) need "$@"; GIVEN[EXCHANGE]="$2"; shift 2 ;;
        --state-dir) need "$@"; GIVEN[STATE_DIR]="$2"; shift 2 ;;
        --python) need "$@"; GIVEN[PYTHON]="$2"; shift 2 ;;
        --jupyterhub-version) need "$@"; GIVEN[JUPYTERHUB_VERSION]="$2"; shift 2 ;;
        --bind-url) need "$@"; GIVEN[BIND_URL]="$2"; shift 2 ;;
        --hub-api-port) need "$@"; GIVEN[HUB_API_PORT]="$2"; shift 2 ;;
        --proxy-api-port) need "$@"; GIVEN[PROXY_API_PORT]="$2"; shift 2 ;;
        --cull-idle) need "$@"; GIVEN[CULL_IDLE]="$2"; shift 2 ;;
        --course-folder) need "$@"; GIVEN[COURSE_FOLDER]="$2"; shift 2 ;;
        --students-group) need "$@"; GIVEN[STUDENTS_GROUP]="$2"; shift 2 ;;
        --instructors-group) need "$@"; GIVEN[INSTRUCTORS_GROUP]="$2"; shift 2 ;;
        --memory-limit) need "$@"; GIVEN[MEMORY_LIMIT]="$2"; shift 2 ;;
        --tasks-limit) need "$@"; GIVEN[TASKS_LIMIT]="$2"; shift 2 ;;
        --cpu-limit) need "$@"; GIVEN[CPU_LIMIT]="$2"; shift 2 ;;
        --ledger-dir) need "$@"; GIVEN[LEDGER_DIR]="$2"; shift 2 ;;
        --ledger-url) need "$@"; GIVEN[LEDGER_URL]="$2"; shift 2 ;;
        --ledger-user) need "$@"; GIVEN[LEDGER_USER]="$2"; shift 2 ;;
        --key-group) need "$@"; GIVEN[KEY_GROUP]="$2"; shift 2 ;;
        --no-ledger) GIVEN[LEDGER]=no; GIVEN[SERVICE_EXCHANGE]=no; shift ;;
        --ledger) GIVEN[LEDGER]=yes; shift ;;
        --exchange-folder) GIVEN[SERVICE_EXCHANGE]=no; shift ;;
        --service-exchange) GIVEN[SERVICE_EXCHANGE]=yes; shift ;;
        --no-service) GIVEN[SERVICE]=no; shift ;;
        --service) GIVEN[SERVICE]=auto; shift ;;
        --unit) need "$@"; GIVEN[UNIT]="$2"; shift 2 ;;
        --show-config) ACTION=show; shift ;;
        --uninstall) ACTION=uninstall; shift ;;
        --lti-config) need "$@"; LTI_CONFIG="$2"; shift 2 ;;   # LTI 1.3 login (course_hub.lti, deploy/lti.md)
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done

course_id_ok() { [[ "$1" =~ ^[a-z][a-z0-9_-]{0,30}$ ]] || die "--course-id $1: expected a short lower-case name (letters, digits, _ -)"; }
[[ -n "${GIVEN[COURSE_ID]+x}" ]] && course_id_ok "${GIVEN[COURSE_ID]}"
# Which install: its configuration folder, given or named by the course id given
if [[ -z "$CONFIG_DIR" ]]; then
    CONFIG_DIR=/etc/jupyterhub
    [[ -n "${GIVEN[COURSE_ID]:-}" && "${GIVEN[COURSE_ID]}" != roofline ]] && CONFIG_DIR="/etc/jupyterhub-${GIVEN[COURSE_ID]}"
fi
[[ "$CONFIG_DIR" =~ ^/[A-Za-z0-9._/+-]*$ ]] || die "$CONFIG_DIR: expected an absolute path of letters, digits and . _ / + -"
SETUP_CONF="$CONFIG_DIR/setup.conf"

# What this install remembers: lines VAR=VALUE, read as text (never run), each value checked
# below as its flag's is (every value is one plain word: a path, a name, a number, a URL)
declare -A REMEMBERED=()
if [[ -f "$SETUP_CONF" ]]; then
    while IFS= read -r line; do
        [[ -z "$line" || "$line" == \#* ]] && continue
        name="${line%%=*}"
        [[ " ${VARS[*]} " == *" $name "* ]] || die "$SETUP_CONF: unknown setting $name"
        REMEMBERED[$name]="${line#*=}"
    done < "$SETUP_CONF"
fi
# the course id first: the other defaults are named after it
COURSE_ID="${GIVEN[COURSE_ID]:-${REMEMBERED[COURSE_ID]:-roofline}}"
course_id_ok "$COURSE_ID"
CHANGED=()
for v in "${VARS[@]}"; do
    if [[ -n "${GIVEN[$v]+x}" ]]; then
        printf -v "$v" '%s' "${GIVEN[$v]}"
        if [[ -n "${REMEMBERED[$v]+x}" && "${REMEMBERED[$v]}" != "${GIVEN[$v]}" ]]; then
            CHANGED+=("$v: ${REMEMBERED[$v]} -> ${GIVEN[$v]}")
        fi
    elif [[ -n "${REMEMBERED[$v]+x}" ]]; then
        printf -v "$v" '%s' "${REMEMBERED[$v]}"
    else
        printf -v "$v" '%s' "$(default_of "$v")"
    fi
done

# The paths end up in Python and JSON files: keep them plain.
for p in "$PREFIX" "$EXCHANGE" "$STATE_DIR" "$PYTHON" "$LEDGER_DIR"; do
    [[ "$p" =~ ^/[A-Za-z0-9._/+-]*$ ]] || die "$p: expected an absolute path of letters, digits and . _ / + -"
done
[[ "$COURSE_FOLDER" =~ ^[A-Za-z0-9._+-]+$ ]] || die "--course-folder $COURSE_FOLDER: expected a plain folder name"
for u in "${INSTRUCTORS[@]}" "${STUDENTS[@]}" "$STUDENTS_GROUP" "$INSTRUCTORS_GROUP" "$LEDGER_USER" "$KEY_GROUP"; do
    [[ "$u" =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "$u: expected a Unix user/group name (lower case, digits, _ -)"
done
[[ "$UNIT" =~ ^[a-z][a-z0-9_-]{0,60}$ ]] || die "--unit $UNIT: expected a systemd unit name (lower case, digits, _ -)"
[[ "$MEMORY_LIMIT" =~ ^[0-9]+[KMGT]?$ ]] || die "--memory-limit $MEMORY_LIMIT: expected a size such as 2G or 512M"
[[ "$TASKS_LIMIT" =~ ^[1-9][0-9]*$ ]] || die "--tasks-limit $TASKS_LIMIT: expected a whole number of processes"
[[ "$CPU_LIMIT" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--cpu-limit $CPU_LIMIT: expected a number of cores such as 1.5"
[[ "$CULL_IDLE" =~ ^[0-9]+$ ]] || die "--cull-idle $CULL_IDLE: expected a number of seconds (0: never)"
[[ "$CULL_IDLE" == 0 || "$CULL_IDLE" -ge 10 ]] || die "--cull-idle $CULL_IDLE: at least 10 seconds (0: never)"
for port in "$HUB_API_PORT" "$PROXY_API_PORT"; do
    [[ "$port" =~ ^[1-9][0-9]{0,4}$ && "$port" -le 65535 ]] || die "$port: expected a TCP port number (1-65535)"
done
[[ "$HUB_API_PORT" != "$PROXY_API_PORT" ]] || die "--hub-api-port and --proxy-api-port are both $HUB_API_PORT"
[[ "$LEDGER_URL" =~ ^http://127\.0\.0\.1:[0-9]{1,5}$ ]] || die "--ledger-url $LEDGER_URL: expected http://127.0.0.1:PORT (the ledger listens on the loopback interface only)"
[[ "$BIND_URL" =~ ^https?://[A-Za-z0-9.:-]*(\[[0-9a-fA-F:]+\])?[A-Za-z0-9.:-]*(/[A-Za-z0-9._/-]*)?$ ]] || die "--bind-url $BIND_URL: expected a URL such as http://:8000 or http://127.0.0.1:8000"
# a version (5.5.*, 6.1.1) is pinned with ==; a pip specifier (>=5, <6, ~=5.5) is taken as it is
if [[ "$JUPYTERHUB_VERSION" =~ ^[0-9]+(\.[0-9]+)*(\.\*)?$ ]]; then
    JUPYTERHUB_REQUIREMENT="jupyterhub==$JUPYTERHUB_VERSION"
elif [[ "$JUPYTERHUB_VERSION" =~ ^(==|>=|<=|~=|!=|<|>)[0-9]+(\.[0-9]+)*(\.\*)?(,(==|>=|<=|~=|!=|<|>)[0-9]+(\.[0-9]+)*(\.\*)?)*$ ]]; then
    JUPYTERHUB_REQUIREMENT="jupyterhub$JUPYTERHUB_VERSION"
else
    die "--jupyterhub-version $JUPYTERHUB_VERSION: expected a version (5.5.*, 6.1.1) or a pip specifier (>=5,<7)"
fi
[[ "$LEDGER" =~ ^(yes|no)$ && "$SERVICE_EXCHANGE" =~ ^(yes|no)$ && "$SERVICE" =~ ^(auto|no)$ ]] \
    || die "$SETUP_CONF: LEDGER and SERVICE_EXCHANGE are yes or no, SERVICE auto or no"
[[ "$LEDGER" == yes || "$SERVICE_EXCHANGE" == no ]] || die "the course service's exchange needs the course service: --exchange-folder with --no-ledger"

ENV="$PREFIX/env"
STUDENT_SITE="$PREFIX/student-site"     # students' course_lib: no solvers (autograder.authoring.student_build)
PROXY_DIR="$PREFIX/proxy"               # configurable-http-proxy, from npm
# JupyterLab's terminals are login shells: this install's environment on its users' PATH there
PROFILE_D="/etc/profile.d/roofline-hub-$COURSE_ID.sh"
MARK="managed by deploy/jupyterhub/setup.sh for the hub configured in $CONFIG_DIR"

write_setup_conf() {
    local v tmp="$SETUP_CONF.new"
    {
        echo "# $MARK: the options of its last run (setup.sh --help). Edit with setup.sh, not by hand."
        for v in "${VARS[@]}"; do printf '%s=%s\n' "$v" "${!v}"; done
    } > "$tmp"
    chmod 0644 "$tmp"
    mv "$tmp" "$SETUP_CONF"
}

show_config() {
    local v
    echo "# $SETUP_CONF$([[ -f "$SETUP_CONF" ]] || echo " (not written yet)")"
    for v in "${VARS[@]}"; do printf '%s=%s\n' "$v" "${!v}"; done
}

# The checkout this script runs from holds the solutions and, once pip has built it, a build/
# copy of the full solvers: students are users of this machine. Cloned with the usual umask
# (022) it is readable by all of them, so it is made private to its owner (and group) here.
checkout_open_to_others() {   # prints the checkout's mode when others may enter it
    local mode
    mode="$(stat -c %a "$SRC")"
    (( 8#$mode & 8#005 )) && echo "$mode"
    return 0
}
OPEN_MODE="$(checkout_open_to_others)"

if [[ "$ACTION" == show ]]; then
    show_config
    for c in "${CHANGED[@]}"; do echo "# would change $c"; done
    [[ -n "$OPEN_MODE" ]] && echo "# would make the checkout $SRC private (mode $OPEN_MODE: other users can read the solutions; chmod o-rwx)"
    exit 0
fi
[[ $(id -u) -eq 0 ]] || die "run me as root (sudo): I create users, groups and system directories"
if [[ -n "$OPEN_MODE" && "$ACTION" != uninstall ]]; then
    chmod o-rwx "$SRC"
    say "made the checkout $SRC private: it was mode $OPEN_MODE, and other users (the students) could read its" \
        "solutions and solvers; now $(stat -c %a "$SRC")"
fi

# ---- what this install owns outside its own folders: one PATH file, one systemd unit -----------------
owner_of() {   # owner_of FILE: the configuration folder whose install wrote FILE ("" if none)
    # (a unit an earlier setup.sh wrote has no such line: its ExecStart names the folder)
    [[ -f "$1" ]] || return 0
    sed -n -e 's/.*managed by deploy\/jupyterhub\/setup.sh for the hub configured in \([^ :]*\).*/\1/p' \
        -e 's/^ExecStart=.*jupyterhub -f \(.*\)\/jupyterhub_config\.py$/\1/p' "$1" 2>/dev/null | head -n 1
}
claim() {   # claim FILE: die if FILE belongs to another install that still exists
    local other
    other="$(owner_of "$1")"
    if [[ -e "$1" && "$other" != "$CONFIG_DIR" ]]; then
        if [[ -n "$other" && -f "$other/setup.conf" ]]; then
            die "$1 belongs to the install configured in $other: give this one its own (--course-id, --unit)"
        elif [[ -z "$other" ]]; then
            die "$1 exists and was not written by setup.sh: move it away, or choose another name (--course-id, --unit)"
        fi
        say "taking over $1 from an install that is gone ($other)"
    fi
}
UNIT_FILE="/etc/systemd/system/$UNIT.service"
# the installs that use PREFIX (two may share one environment): uninstall removes it with the last
USED_BY="$PREFIX/used-by"

hub_pids() {   # the processes of a hub started by hand with this install's configuration
    pgrep -f "jupyterhub -f $CONFIG_DIR/jupyterhub_config.py" || true
}

uninstall() {
    [[ -f "$SETUP_CONF" ]] || die "no install recorded in $SETUP_CONF: name it with --config-dir DIR or --course-id ID"
    # a hub still running on what is about to go (its environment, database, configuration) would
    # ignore SIGTERM and orphan its proxy, ledger and culler: stop it first, or refuse
    local running
    if [[ "$(owner_of "$UNIT_FILE")" == "$CONFIG_DIR" ]]; then
        systemctl disable --now "$UNIT.service" || true
        rm -f "$UNIT_FILE"
        systemctl daemon-reload || true
        say "removed the systemd unit $UNIT"
    fi
    running="$(hub_pids | tr '\n' ' ')"
    if [[ -n "${running// /}" ]]; then
        die "the hub started with -f $CONFIG_DIR/jupyterhub_config.py is running (pid ${running% }): stop it" \
            "(with its proxy and services: kill the hub's process group, or Ctrl-C where it runs), then run" \
            "--uninstall again; nothing was removed"
    fi
    if [[ "$(owner_of "$PROFILE_D")" == "$CONFIG_DIR" ]]; then
        rm -f "$PROFILE_D"
        say "removed $PROFILE_D"
    fi
    if [[ -f "$USED_BY" ]]; then
        grep -vxF "$CONFIG_DIR" "$USED_BY" > "$USED_BY.new" || true
        mv "$USED_BY.new" "$USED_BY"
    fi
    if [[ -f "$USED_BY" && ! -s "$USED_BY" ]]; then
        rm -rf "$PREFIX"
        say "removed $PREFIX (environment, proxy, students' copy of course_lib)"
    elif [[ -d "$PREFIX" ]]; then
        say "kept $PREFIX: the installs in $USED_BY use it too"
    fi
    local f gone=()
    for f in "$STATE_DIR/jupyterhub.sqlite" "$STATE_DIR/jupyterhub_cookie_secret" "$STATE_DIR/jupyterhub-proxy.pid"; do
        [[ -e "$f" ]] && gone+=("${f##*/}")
        rm -f "$f"
    done
    rmdir "$STATE_DIR" 2>/dev/null || true
    [[ ${#gone[@]} -gt 0 ]] && say "removed the hub's ${gone[*]} from $STATE_DIR"
    local keep=()
    [[ -f "$CONFIG_DIR/jupyterhub_config.local.py" ]] && keep+=("$CONFIG_DIR/jupyterhub_config.local.py (yours)")
    rm -f "$CONFIG_DIR/jupyterhub_config.py" "$CONFIG_DIR/roofline_site.json" "$CONFIG_DIR/roofline_variant_secret" "$CONFIG_DIR/lti.json" "$SETUP_CONF"
    rmdir "$CONFIG_DIR" 2>/dev/null || true
    say "removed the hub's configuration in $CONFIG_DIR"
    # what is left, listing only what exists (an exchange never made is not named)
    local left=() g groups=()
    for g in "$STUDENTS_GROUP" "$INSTRUCTORS_GROUP" "$KEY_GROUP"; do
        getent group "$g" >/dev/null && groups+=("$g")
    done
    [[ ${#groups[@]} -gt 0 ]] && left+=("the users of the groups ${groups[*]} and their homes (the instructors' course folders, grades), the groups themselves")
    id -u "$LEDGER_USER" >/dev/null 2>&1 && left+=("the course service's user $LEDGER_USER")
    [[ -d "$LEDGER_DIR" ]] && left+=("its records and submissions in $LEDGER_DIR")
    [[ -d "$EXCHANGE" ]] && left+=("the exchange $EXCHANGE")
    left+=("${keep[@]}")
    if [[ ${#left[@]} -gt 0 ]]; then
        local IFS=";"
        say "left in place (remove them yourself once no longer needed):${left[*]/#/ }"
    fi
}
if [[ "$ACTION" == uninstall ]]; then
    uninstall
    exit 0
fi

for c in "${CHANGED[@]}"; do say "changed $c (remembered in $SETUP_CONF)"; done
claim "$PROFILE_D"
[[ "$SERVICE" == auto && -d /run/systemd/system ]] && claim "$UNIT_FILE"
mkdir -p "$CONFIG_DIR" "$PREFIX"
write_setup_conf
# the installs using PREFIX: this one, and the others whose configuration still exists
{ cat "$USED_BY" 2>/dev/null || true; echo "$CONFIG_DIR"; } | sort -u | while IFS= read -r d; do
    if [[ "$d" == "$CONFIG_DIR" || -f "$d/setup.conf" ]]; then echo "$d"; fi
done > "$USED_BY.new"
mv "$USED_BY.new" "$USED_BY"

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
# inside PREFIX (npm --prefix), nothing installed for the whole machine
CHP="$PROXY_DIR/node_modules/.bin/configurable-http-proxy"
if [[ ! -x "$CHP" ]]; then
    say "installing configurable-http-proxy into $PROXY_DIR (npm; log: $PREFIX/npm.log)"
    mkdir -p "$PROXY_DIR"
    npm install --prefix "$PROXY_DIR" --no-fund --no-audit --no-update-notifier configurable-http-proxy@5 \
        > "$PREFIX/npm.log" 2>&1 || { tail -n 30 "$PREFIX/npm.log" >&2; die "npm failed (see $PREFIX/npm.log)"; }
fi

# ---- 3. the shared environment ----------------------------------------------------------------------
# Students' servers run this Python: it must not live under a private directory (e.g. /root/.pyenv).
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11)' || die "$PYTHON: Python 3.11 or newer needed (nbgrader 0.9.6 requires it)"
if [[ ! -x "$ENV/bin/python" ]]; then
    say "creating the shared environment $ENV"
    mkdir -p "$PREFIX"
    "$PYTHON" -m venv "$ENV"
    "$ENV/bin/python" -m pip install --quiet --upgrade pip
fi
# Rebuild only when what goes into it changed: the package sources (the course's JupyterLab
# extension in course_lib/labextension/ among them) and this list.
REQUIREMENTS=("$JUPYTERHUB_REQUIREMENT" "jupyterhub-idle-culler>=1.2" "$SRC[course]")
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
# The course service's exchange (the default) keeps submissions in its own folder (LEDGER_DIR);
# nbgrader's folder exchange only with --exchange-folder. Its layout: the root writable by everyone
# (sticky, so nobody removes another's files); the course's folder inside it belongs to the
# instructor (step 6).
if [[ "$SERVICE_EXCHANGE" == no ]]; then
    mkdir -p "$EXCHANGE"
    chown root:root "$EXCHANGE"
    chmod 1777 "$EXCHANGE"
fi

# ---- 6. users, groups, homes --------------------------------------------------------------------
# The homes setup.sh creates are private (0700, useradd's HOME_MODE for this call only: the
# machine's /etc/login.defs and /etc/adduser.conf are not changed; homes made otherwise keep the
# machine's default).
for g in "$STUDENTS_GROUP" "$INSTRUCTORS_GROUP"; do
    getent group "$g" >/dev/null || groupadd "$g"
done

add_user() {   # add_user NAME GROUP: the user (created if missing), in GROUP, home 0700
    local name="$1" group="$2" home
    if ! id -u "$name" >/dev/null 2>&1; then
        useradd --create-home --key HOME_MODE=0700 --user-group --shell /bin/bash "$name"
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
    # the course's id in the exchange: the course's nbgrader_config.py and `python -m autograder`
    # read it from here (without the file: roofline)
    idfile="$course/.autograder/course-id"
    if [[ "$(cat "$idfile" 2>/dev/null)" != "$COURSE_ID" ]]; then
        as_user "$i" "$home" mkdir -p -m 0700 "$course/.autograder"
        printf '%s\n' "$COURSE_ID" | as_user "$i" "$home" tee "$idfile" >/dev/null
    fi
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
if [[ ${#INSTRUCTORS[@]} -gt 0 && "$SERVICE_EXCHANGE" == no ]]; then
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
    "hub_api_url": "http://127.0.0.1:$HUB_API_PORT", "proxy_api_url": "http://127.0.0.1:$PROXY_API_PORT",
    "cull_idle": $CULL_IDLE,
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
# a terminal has no `python` (or the system's, without the course) and no `nbgrader`. One file per
# install (PROFILE_D, named by the course id), acting only for the members of this install's
# groups: another install's users keep their own environment.
groups_case="*\" $STUDENTS_GROUP \"*|*\" $INSTRUCTORS_GROUP \"*"
[[ "$LEDGER" == yes ]] && groups_case+="|*\" $KEY_GROUP \"*"
profile="# $MARK:
# its environment first on PATH in the login shells (JupyterLab's terminals) of its users only
_roofline_groups=\" \$(id -nG 2>/dev/null) \"
case \"\$_roofline_groups\" in
    $groups_case)
        case \"\$PATH\" in
            \"$ENV/bin\"|\"$ENV/bin:\"*) ;;
            *) PATH=\"$ENV/bin:\$PATH\"; export PATH ;;
        esac"
if [[ "$LEDGER" == yes ]]; then
    # as in a student's server: everyone but the key's group imports the copy without the answer key
    profile+="
        case \"\$_roofline_groups\" in
            *\" $KEY_GROUP \"*) unset PYTHONPATH ;;
            *) PYTHONPATH=\"$STUDENT_SITE\"; export PYTHONPATH ;;
        esac"
fi
profile+="
        ;;
esac
unset _roofline_groups"
if [[ "$(cat "$PROFILE_D" 2>/dev/null)" != "$profile" ]]; then
    printf '%s\n' "$profile" > "$PROFILE_D.new"
    chmod 0644 "$PROFILE_D.new"
    mv "$PROFILE_D.new" "$PROFILE_D"
    say "this install's environment on its users' PATH in login shells: $PROFILE_D"
fi
# an earlier setup.sh wrote one machine-wide file for every user: gone, when it was this install's
old_profile=/etc/profile.d/roofline-course.sh
if grep -q "managed by deploy/jupyterhub/setup.sh" "$old_profile" 2>/dev/null && grep -qF "$ENV/bin" "$old_profile"; then
    rm -f "$old_profile"
    say "removed $old_profile (machine-wide, written by an earlier setup.sh; now $PROFILE_D)"
fi

start="$ENV/bin/jupyterhub -f $CONFIG_DIR/jupyterhub_config.py"
if [[ "$SERVICE" == auto && -d /run/systemd/system ]]; then
    sed -e "s|@ENV@|$ENV|g" -e "s|@CONFIG_DIR@|$CONFIG_DIR|g" -e "s|@STATE_DIR@|$STATE_DIR|g" \
        -e "s|@COURSE_ID@|$COURSE_ID|g" "$KIT/jupyterhub.service" > "$UNIT_FILE"
    systemctl daemon-reload
    systemctl enable --now "$UNIT.service"
    say "hub running as the systemd service $UNIT (after changes: systemctl restart $UNIT)"
else
    say "start the hub with: cd $STATE_DIR && $start"
fi
if [[ "$BIND_URL" == http://* && ! "$BIND_URL" =~ ^http://(127\.0\.0\.1|localhost|\[::1\])(:|/|$) ]]; then
    say "NOTE: the hub serves plain HTTP on $BIND_URL: put HTTPS in front before a real term" \
        "(--bind-url http://127.0.0.1:8000 behind Caddy or nginx; see deploy/jupyterhub/README.md)"
fi
say "done: environment $ENV, exchange $EXCHANGE, hub config $CONFIG_DIR (options remembered in $SETUP_CONF)"
