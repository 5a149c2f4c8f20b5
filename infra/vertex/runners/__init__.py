"""Where a job runs: Vertex AI (vertex.py, vertex_tuning.py) or processes on this machine (local/)."""
