# scratch: are seed-4[*,default] divergences only the beta/gamma decay filter? Group params disable it.
from mindspore import nn
from conformance.schema import load_spec
from conformance.execute import run_instance
from conformance.runners.mindspore import MindSporeRunner
spec = {i.id: i for i in load_spec()}

class Grouped(MindSporeRunner):
    def make_optimizer(self, optimizer):
        real = nn.SGD, nn.Momentum, nn.Adam
        super().make_optimizer(optimizer.model_copy(update={"regularizers": {"fc.weight": optimizer.weight_decay}}))

for iid in ["seed-4-bn-stats-not-regularized[sgd,default]", "seed-4-bn-stats-not-regularized[momentum,default]",
            "seed-4-bn-stats-not-regularized[adam,default]", "bn-affine-decayed[sgd]"]:
    for cls in (MindSporeRunner, Grouped):
        r = run_instance(cls(), spec[iid], "2.10.0", [])
        print(f"{cls.__name__:16} {iid}: {r.verdict} {r.reason or ''}")
