"""zero's pipeline: the `zero-generation` Prefect flow with DVC lineage and MLflow tracking.

The library (`zero/`) knows nothing of Prefect, MLflow or DVC; this package
wraps its stage functions:

- flows.layout      workspace layout, seeds, the per-line lock (no services)
- flows.request     a flow run's parameters: params file, overrides, generation, workspace
- flows.compute     what a run used: wall time, cores, GPU-hours
- flows.stages      the stage functions DVC runs and the flow's tasks call (no services)
- flows.lineage     DVC and git: dvc.lock, the remote, the code's commit
- flows.tracking    MLflow runs, network artifacts and the model registry
- flows.ladder, flows.ship   a line's ladder (`zero-ladder`); its champion shipped to models/
- flows.generation  the flows `zero-generation` and `zero-loop`
- flows.capacity, flows.actors   what a Ray cluster holds; self-play actors on it (the `ray` extra)
- flows.cluster     the same flow on a Ray cluster (needs the `ray` extra)
- flows.servers, flows.serve   the local Prefect server and the serve process (`python -m flows.serve`)

The modules import each other in one direction only, never in a circle (tests/test_flow_imports.py).
Importing this package imports nothing heavy.
"""
