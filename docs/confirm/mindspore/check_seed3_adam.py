# scratch: is seed-3[adam] explained by nn.Adam's eps placement? (uses the suite to get the case)
import numpy as np
from conformance.schema import load_spec
from conformance.scenario import observe
from conformance.runners.mindspore import MindSporeRunner
from conformance.reference import ReferenceRunner
spec = {i.id: i for i in load_spec()}
for iid, name in [("seed-3-stop-gradient-vs-frozen[adam,stop_gradient]", "conv3.weight"),
                  ("clip-global-norm[adam]", "b.weight"), ("clip-ignores-frozen[adam]", "a.bias")]:
    case = spec[iid].case
    obs = observe(MindSporeRunner(), case)
    ref = observe(ReferenceRunner(), case)
    g = obs.steps[0].grads[name]
    if case.optimizer.clip_global_norm:
        allg = [v for v in obs.steps[0].grads.values() if v is not None]
        tot = np.sqrt(sum((v * v).sum() for v in allg)); g = g * min(1, case.optimizer.clip_global_norm / tot)
    g = g + case.optimizer.weight_decay * obs.initial[name]
    lr, (b1, b2), eps = case.optimizer.lr, case.optimizer.betas, case.optimizer.eps
    m, v = (1 - b1) * g, (1 - b2) * g * g
    folded = obs.initial[name] - lr * np.sqrt(1 - b2) / (1 - b1) * m / (np.sqrt(v) + eps)
    print(iid, "min|g|", np.abs(g).min(), "obs-ref", np.abs(obs.steps[0].values[name] - ref.steps[0].values[name]).max(),
          "obs-folded", np.abs(obs.steps[0].values[name] - folded).max())
