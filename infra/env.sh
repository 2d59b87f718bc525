# Source this from the repository root to use the prefect, mlflow and dvc CLIs by hand
# with the same settings as the Makefile:   . infra/env.sh
# (PREFECT_PORT=4300 . infra/env.sh for another port.)
_zero_root="$(pwd)"
export PREFECT_HOME="$_zero_root/.prefect"
export PREFECT_API_URL="http://127.0.0.1:${PREFECT_PORT:-4200}/api"
export ZERO_PREFECT_PORT="${PREFECT_PORT:-4200}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export PREFECT_SERVER_API_HOST=127.0.0.1
export MLFLOW_TRACKING_URI="sqlite:///$_zero_root/mlflow.db"
export MLFLOW_DISABLE_TELEMETRY=true
export MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false
export DVC_NO_ANALYTICS=1
export DO_NOT_TRACK=1
[ -d "$_zero_root/.venv" ] && export PATH="$_zero_root/.venv/bin:$PATH"
unset _zero_root
