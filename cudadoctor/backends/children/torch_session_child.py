"""Run as a script in the TARGET interpreter (stdlib + torch only): several torch checks of one run in
ONE process, so torch is imported once (seconds per process). Never imported by cudadoctor itself.

argv[1] is a JSON list of stages, in order: [name, script, function, args], a function of a child
script beside this one (torch_child.py, measure_child.py, compile_child.py) that prints its facts
after its own marker, as that script does when run alone. After each stage this prints END + name
(+ a one-line error when the stage raised), so that the parent bounds each stage by its own time and
hands its facts on at once.
"""

import importlib.util
import json
import os
import sys
import traceback

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import hard_exit, leave_path

leave_path()

END = "CUDADOCTOR_STAGE_END "
HERE = os.path.dirname(os.path.abspath(__file__))


def load(script):
    name = "cudadoctor_stage_" + os.path.splitext(os.path.basename(script))[0]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, os.path.basename(script)))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def main():
    for name, script, function, args in json.loads(sys.argv[1]):
        message = ""
        try:
            getattr(load(script), function)(*args)
        except (Exception, SystemExit) as exc:  # this stage failed; the next ones may still work
            traceback.print_exc()
            lines = ("%s: %s" % (type(exc).__name__, exc)).strip().splitlines()
            message = lines[0][:300] if lines else type(exc).__name__
        # on a line of its own, even after a stage that left a line unfinished (print(..., end=""))
        sys.stdout.write("\n" + END + name + (" " + message if message else "") + "\n")
        sys.stdout.flush()
        sys.stderr.write("\n" + END + name + "\n")  # what follows on stderr belongs to the next stage
        sys.stderr.flush()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Exit at once, as every child does: tearing torch down at interpreter exit takes up to a second.
    hard_exit(0)
