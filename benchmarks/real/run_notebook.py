"""Execute docs/examples/notebook.ipynb in a real Jupyter kernel and print each code cell's text output
(the HTML of a report is measured, not printed). Used by benchmarks/real_gpu.sh on a real GPU."""

import sys
import time

import nbclient
import nbformat

nb = nbformat.read(sys.argv[1], as_version=4)
start = time.perf_counter()
nbclient.NotebookClient(nb, timeout=240, kernel_name="python3").execute()
print(f"executed in {time.perf_counter() - start:.1f} s")
for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
    print(f"--- cell {i}: {cell.source.splitlines()[0] if cell.source else ''}")
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            print("ERROR", out.get("ename"), out.get("evalue"))
        data = out.get("data", {})
        if "text/html" in data:
            print(f"[html {len(data['text/html'])} chars]")
        if "text/plain" in data:
            print(data["text/plain"][:1500])
        if "text" in out:
            print(out["text"][:1500])
