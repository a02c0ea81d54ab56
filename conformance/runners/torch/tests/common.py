"""What the torch room's tests share: the spec's instances by id, and an instance's schedule written by
hand in torch, to hold the adapter to."""
import numpy as np
import torch

from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.torch.runner import TorchRunner
from conformance.spec import load_spec, schedule

SPEC = {i.id: i for i in load_spec()}


def hand_written(instance_id, make_opt, before_step=lambda index, layers, opt: None, clip=None, criterion=None):
    """The instance's schedule written by hand in torch (Linear layers only; the loss `criterion`, else the mean
    squared error): returns its layers' weights after the last step, in the canonical (in, out) layout, for
    comparison with the adapter."""
    case = SPEC[instance_id].case
    init = initial_values(case)
    layers = {name: torch.nn.Linear(*spec.linear) for name, spec in case.model.layers.items()}
    with torch.no_grad():
        for name, layer in layers.items():
            layer.weight.copy_(torch.as_tensor(init[f"{name}.weight"].T))
            layer.bias.copy_(torch.as_tensor(init[f"{name}.bias"]))
    opt = make_opt(layers)
    for index, step in enumerate(schedule(case)):
        before_step(index, layers, opt)
        opt.zero_grad()
        x, t = batch(case, index, step.path)
        y = torch.as_tensor(x)
        for name in step.path:
            y = layers[name](y)
        (criterion(y, torch.as_tensor(t)) if criterion else ((y - torch.as_tensor(t)) ** 2).mean()).backward()
        if clip:
            clip(layers)
        opt.step()
    return {f"{n}.{r}": getattr(layer, r).detach().numpy().T.copy() for n, layer in layers.items() for r in ("weight", "bias")}


def assert_adapter_equals(instance_id, expected):
    """The adapter's eager run of the instance ends on exactly these values."""
    obs = observe(TorchRunner(), SPEC[instance_id].case)
    for name, value in expected.items():
        np.testing.assert_array_equal(obs.steps[-1].values[name], value, err_msg=name)
