"""zero's pipeline: the `zero-generation` Prefect flow with DVC lineage and MLflow tracking.

The library (`zero/`) knows nothing of Prefect, MLflow or DVC; this package
wraps its stage functions:

- flows.layout      workspace layout, seeds, the per-line lock (no services)
- flows.stages      the stage functions DVC runs and the flow's tasks call (no services)
- flows.lineage     DVC and git: dvc.lock, the remote, the code's commit
- flows.tracking    MLflow runs, network artifacts and the model registry
- flows.generation  the flows `zero-generation` and `zero-loop`
- flows.servers, flows.serve   the local Prefect server and the serve process (`python -m flows.serve`)
- flows.cluster     the same flow on a Ray cluster (needs the `ray` extra)

Importing this package imports nothing heavy.
"""
