"""Scratch: re-judge some instances with eps=0 in both oracle and TF: if they conform, epsilon-hat was the cause."""
import sys
from conformance.schema import load_spec, SPEC_DIR
from conformance.scenario import observe
from conformance.reference import ReferenceRunner
from conformance.verdict import evaluate
from conformance.runners.tensorflow import TensorFlowRunner
spec = {i.id: i for i in load_spec(SPEC_DIR)}
for iid in sys.argv[1:]:
    inst = spec[iid]
    for eps in (inst.case.optimizer.eps, 0.0):
        case = inst.case.model_copy(deep=True); case.optimizer.eps = eps
        inst2 = inst.model_copy(update={"case": case})
        checks = evaluate(inst2, observe(TensorFlowRunner(), case), observe(ReferenceRunner(), case))
        print(iid, "eps", eps, "->", [c.check for c in checks if not c.held] or "conform")
