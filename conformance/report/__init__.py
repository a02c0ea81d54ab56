"""What the results become: the HTML page (page.py, templates/), the asv reader (bench.py) and the
generated docs (docs.py)."""
