#!/usr/bin/env bash
# make install on a machine without network access: .venv over the machine's own Python and packages (torch,
# numba, numpy and the rest of its image, seen through --system-site-packages), with the pipeline's wheels from
# an archive that infra/offline_bundle.py wrote elsewhere, and zero itself; then `make run`, `make up` and the
# rest work as on any workspace. From the repository root:
#   bash infra/offline-install.sh .offline/wheels-py312.tar.xz
# PYTHON: the interpreter to build on (python3). BASE_SITE: a site-packages folder of the machine's packages
# that is not its Python's own (a .pth file in .venv adds it).
set -euo pipefail
archive=${1:?usage: infra/offline-install.sh WHEELS.tar.xz}
py=${PYTHON:-python3}
test -f "$archive" || { echo "offline-install: $archive: no such archive (infra/offline_bundle.py writes one)" >&2; exit 2; }
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["python"])' "$archive.json" 2>/dev/null || true)
have=$($py -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ -n "$want" ] && [ "$want" != "$have" ]; then
    echo "offline-install: $archive holds wheels for CPython $want; $py is $have" >&2; exit 2
fi
for module in torch numba numpy; do
    $py -c "import $module" 2>/dev/null || [ -n "${BASE_SITE:-}" ] \
        || { echo "offline-install: $py has no $module: the archive leaves the machine's own packages out" >&2; exit 2; }
done
t0=$SECONDS
$py -m venv --system-site-packages --without-pip .venv
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# where $py is itself a venv's interpreter (a CUDA image's /opt/torch/.venv), --system-site-packages reaches only
# its base Python's folders: that venv's site-packages are added by the .pth file too, after .venv's own
$py -c 'import site, sys; sys.prefix != sys.base_prefix and print("\n".join(site.getsitepackages()))' \
    > "$site/zero-base-site.pth"
[ -n "${BASE_SITE:-}" ] && echo "$BASE_SITE" >> "$site/zero-base-site.pth"
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
tar -xJf "$archive" -C "$wheels"
.venv/bin/python -m pip install --quiet --no-index --no-deps --no-compile --disable-pip-version-check "$wheels"/*.whl
.venv/bin/python -m pip install --quiet --no-index --no-deps --no-build-isolation --disable-pip-version-check -e .
# sgfmill's sources warn of an escape sequence as Python 3.12 compiles them: compiled once here, quietly, not in each process
.venv/bin/python -W ignore::SyntaxWarning -m compileall -q "$site/sgfmill" >/dev/null
.venv/bin/python -c 'import torch, numba, yaml' \
    || { echo "offline-install: .venv does not see the machine's packages (torch, numba, pyyaml)" >&2; exit 2; }
.venv/bin/zero warmup >/dev/null
touch .venv/.zero-installed  # make install's stamp: the Makefile's targets take this .venv as installed
echo "offline-install: .venv with $(ls "$wheels" | wc -l) wheels from $archive and zero, in $((SECONDS - t0)) s"
