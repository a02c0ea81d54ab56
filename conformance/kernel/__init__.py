"""What the engine, the auditor, the report and the rooms all need and none of them owns: processes
(processes.py), files written whole and the results file's lock (files.py), one-line messages
(lines.py). It imports nothing of the rest of the package, so any layer may import it
(tests/unit/test_layers_of_the_package.py holds it so)."""
