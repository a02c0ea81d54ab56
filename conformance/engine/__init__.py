"""The engine: observe a case on any runner (scenario.py), check and judge it (verdict.py,
judge.py), isolate a framework in a worker process (worker.py), hold a room to its expected
outcomes (contract.py)."""
