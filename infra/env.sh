# The workspace's settings for the prefect, mlflow and dvc CLIs, the same as the Makefile's.
# `make install` has .venv/bin/activate source this file with the workspace's root and ports, so
#     . .venv/bin/activate
# is the one set-up line, in any directory, and `deactivate` undoes both. Without the venv's script, from
# the repository root: `. infra/env.sh` (PREFECT_PORT=4300 MLFLOW_PORT=5300 . infra/env.sh for other ports);
# `zero_env_off` undoes it. bash, zsh and sh.

zero_env_off() {  # every setting back as it was before infra/env.sh
    eval "${_ZERO_ENV_UNDO:-}"
    unset _ZERO_ENV_UNDO
}

_zero_export() {  # NAME VALUE: export it, remembering its earlier value (or its absence) for zero_env_off
    if eval "[ -n \"\${$1+x}\" ]"; then
        eval "_zero_old=\"\${$1}\""
        _ZERO_ENV_UNDO="${_ZERO_ENV_UNDO}export $1='$(printf '%s' "$_zero_old" | sed "s/'/'\\\\''/g")'; "
    else
        _ZERO_ENV_UNDO="${_ZERO_ENV_UNDO}unset $1; "
    fi
    export "$1=$2"
}

[ -z "${_ZERO_ENV_UNDO:-}" ] || zero_env_off  # sourced again (another workspace, other ports): from scratch
_zero_root="${_zero_root:-$(pwd)}"
_zero_prefect_port="${_zero_prefect_port:-${PREFECT_PORT:-4200}}"
_zero_mlflow_port="${_zero_mlflow_port:-${MLFLOW_PORT:-5000}}"
_ZERO_ENV_UNDO=": ; "
_zero_export PREFECT_PORT "$_zero_prefect_port"
_zero_export MLFLOW_PORT "$_zero_mlflow_port"
_zero_export PREFECT_HOME "$_zero_root/.prefect"
_zero_export PREFECT_API_URL "http://127.0.0.1:$_zero_prefect_port/api"
_zero_export ZERO_PREFECT_PORT "$_zero_prefect_port"
_zero_export PREFECT_SERVER_API_HOST 127.0.0.1
_zero_export PREFECT_SERVER_API_PORT "$_zero_prefect_port"
_zero_export PREFECT_SERVER_ANALYTICS_ENABLED false
_zero_export MLFLOW_TRACKING_URI "sqlite:///$_zero_root/mlflow.db"
_zero_export MLFLOW_BACKEND_STORE_URI "sqlite:///$_zero_root/mlflow.db"
_zero_export MLFLOW_DISABLE_TELEMETRY true
_zero_export MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR false
_zero_export DVC_NO_ANALYTICS 1
_zero_export DO_NOT_TRACK 1
case ":$PATH:" in
    *":$_zero_root/.venv/bin:"*) ;;
    *) [ ! -d "$_zero_root/.venv/bin" ] || _zero_export PATH "$_zero_root/.venv/bin:$PATH" ;;
esac
unset _zero_root _zero_prefect_port _zero_mlflow_port _zero_old
unset -f _zero_export
