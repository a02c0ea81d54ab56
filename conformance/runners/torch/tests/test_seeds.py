"""The seed reports in their original shape: the user's torch code of a seed case, written by hand,
equals the adapter's run of it."""
import numpy as np
import torch

from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.torch.runner import TorchRunner

from .common import SPEC


def test_seed_1_through_the_adapter_equals_plain_torch_code():
    """seed-1 (decay and an unused layer): two Linear layers, SGD with momentum and weight decay, the
    second step's forward skipping the first layer."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(TorchRunner(), case)

    init = initial_values(case)
    first, second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
    with torch.no_grad():
        for layer, name in ((first, "first"), (second, "second")):
            layer.weight.copy_(torch.as_tensor(init[f"{name}.weight"].T))
            layer.bias.copy_(torch.as_tensor(init[f"{name}.bias"]))
    opt = torch.optim.SGD([*first.parameters(), *second.parameters()], lr=0.1, momentum=0.9,
                          weight_decay=0.0005)
    for index, path in enumerate([[first, second], [second]]):
        opt.zero_grad()
        x, t = batch(case, index, case.steps[index].path)
        y = torch.as_tensor(x)
        for layer in path:
            y = layer(y)
        ((y - torch.as_tensor(t)) ** 2).mean().backward()
        opt.step()
    np.testing.assert_array_equal(obs.steps[-1].values["first.weight"], first.weight.detach().numpy().T)
    np.testing.assert_array_equal(obs.steps[-1].values["second.weight"], second.weight.detach().numpy().T)
