# Sourced by bin/demo.sh and bin/run-tests.sh (bash): the project's
# virtualenv, and its editable install, skipped when nothing it depends on
# changed. Run from the checkout's top directory.

# The files an editable install depends on: the package's metadata and
# entry points, its requirements. A change of source needs no reinstall.
INSTALL_INPUTS=(setup.cfg setup.py pyproject.toml requirements.txt)

# install_digest REQUIREMENTS...: a hash of what the install depends on:
# the checkout's path (an editable install points at one checkout), the
# inputs and the given requirements files.
install_digest() {
    local file
    {
        printf '%s\n' "$PWD"
        for file in "${INSTALL_INPUTS[@]}" "$@"; do
            printf '== %s\n' "$file"
            if [ -e "$file" ]; then cat "$file"; fi
        done
    } | sha256sum | cut -d' ' -f1
}

# install_project VENV NAME [REQUIREMENTS...]: create VENV if needed, then
# pip install -e . (with -r REQUIREMENTS) unless the stamp VENV/.NAME.stamp
# holds the digest of the same inputs. The stamp is written only after pip
# succeeded, so a failed install is tried again at the next run.
# INSTALL_EXTRAS=a,b installs the project's extras a and b too (setup.cfg
# [extras]: postgresql, mysql, tracing), e.g. -e '.[postgresql,mysql]'.
install_project() {
    local venv=$1 name=$2 requirement digest
    shift 2
    local extras=${INSTALL_EXTRAS:-}
    local pip_args=(-e ".${extras:+[$extras]}")
    for requirement in "$@"; do
        pip_args+=(-r "$requirement")
    done
    local stamp=$venv/.barbican-retry-$name.stamp
    if [ ! -x "$venv/bin/python" ]; then
        echo "${0##*/}: creating the virtualenv $venv" >&2
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip
    fi
    digest=$(printf '%s\n' "extras: $extras" "$(install_digest "$@")" |
        sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
        return 0
    fi
    local inputs=("${INSTALL_INPUTS[@]}" "$@")
    echo "${0##*/}: installing the project into $venv (first run, or" \
         "one of ${inputs[*]} changed)" >&2
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q \
        "${pip_args[@]}"
    printf '%s\n' "$digest" >"$stamp.tmp"
    mv "$stamp.tmp" "$stamp"
}
