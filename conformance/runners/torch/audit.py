"""The torch probe of `python -m conformance audit`: a user's nn.Module, optimizer and step.

Gradients are read where the update reads them: an optimizer step pre-hook
(Optimizer.register_step_pre_hook) runs at the start of every optimizer.step() the user's step makes,
reads `p.grad` of each parameter the optimizer holds and every module's train/eval mode, and changes
nothing. A step handed a closure (`optimizer.step(closure)`: Lightning's automatic optimization, LBFGS)
computes the gradients inside step(): the hook hands step() the same closure wrapped, which reads them
as it returns, before the update. uninstall() removes the hook.
"""
from __future__ import annotations

import torch

from ...auditor.observe import AuditInputError, DecaySetting, Inventory, Layer, Param, Probe, grad_state
from ...auditor.walk import plain_contents

STATISTICS = ("running_mean", "running_var")
INTERNALS = {"_modules", "_parameters", "_buffers"}  # what nn.Module registers; walked as registered


def _type(obj) -> str:
    return type(obj).__name__


class TorchProbe(Probe):
    framework = "torch"

    def __init__(self, model, optimizer):
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = model.module  # the user's model is inside; DDP's own attributes are not theirs
        if not isinstance(model, torch.nn.Module):
            raise AuditInputError(f"model is a {type(model).__module__}.{type(model).__qualname__}, "
                                  "not a torch.nn.Module")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise AuditInputError(f"optimizer is a {type(optimizer).__module__}.{type(optimizer).__qualname__}, "
                                  "not a torch.optim.Optimizer")
        super().__init__(model, optimizer)
        self._hook = None
        self._updates: list[dict] = []
        self._modules = self._find_modules()             # path -> (module, registered)
        self._tensors = self._find_tensors()             # name -> (tensor, Param)

    # ---------------------------------------------------------------- what the model holds
    def _find_modules(self) -> dict:
        modules = {path: (m, True) for path, m in self.model.named_modules(remove_duplicate=True)}
        registered = {id(m) for m, _ in modules.values()}
        queue = list(modules.items())
        while queue:
            path, (module, _) = queue.pop(0)
            attributes = {k: v for k, v in vars(module).items() if k not in INTERNALS}
            for where, found in plain_contents(attributes, (torch.nn.Module, torch.nn.Parameter)):
                if not isinstance(found, torch.nn.Module) or id(found) in registered:
                    continue
                base = f"{path}.{where}" if path else where
                for sub, m in found.named_modules(remove_duplicate=True):
                    if id(m) not in registered:
                        registered.add(id(m))
                        entry = (f"{base}.{sub}" if sub else base, (m, False))
                        modules[entry[0]] = entry[1]
                        queue.append(entry)
        return modules

    def _find_tensors(self) -> dict:
        held = {id(p): group for group in self.optimizer.param_groups for p in group["params"]}
        tensors, seen = {}, set()

        def add(name, tensor, layer, module, statistic, registered):
            if id(tensor) in seen:
                return
            seen.add(id(tensor))
            group = held.get(id(tensor))
            decay = group.get("weight_decay") if group is not None else None
            tensors[name] = (tensor, Param(
                name=name, layer=layer, layer_type=_type(module), size=tensor.numel(),
                trainable=bool(tensor.requires_grad) and not statistic, statistic=statistic,
                registered=registered, in_optimizer=group is not None,
                decayed=None if decay is None else bool(decay)))

        for path, (module, registered) in self._modules.items():  # registered ones come first
            for local, p in module.named_parameters(recurse=False):
                add(f"{path}.{local}" if path else local, p, path, module, False, registered)
            if isinstance(module, torch.nn.modules.batchnorm._NormBase):
                for local in STATISTICS:
                    buffer = getattr(module, local, None)
                    if isinstance(buffer, torch.Tensor):
                        add(f"{path}.{local}" if path else local, buffer, path, module, True, registered)
            attributes = {k: v for k, v in vars(module).items() if k not in INTERNALS}
            for where, found in plain_contents(attributes, (torch.nn.Module, torch.nn.Parameter)):
                if isinstance(found, torch.nn.Parameter):
                    add(f"{path}.{where}" if path else where, found, path, module, False, False)
        return tensors

    def inventory(self) -> Inventory:
        return Inventory(
            framework="torch", version=torch.__version__, model_type=_type(self.model),
            params=[param for _, param in self._tensors.values()],
            layers=[Layer(path=path, type=_type(m), registered=registered)
                    for path, (m, registered) in self._modules.items() if path],
            decay_settings=self._decay_settings(), has_modes=True)

    def _decay_settings(self) -> list[DecaySetting]:
        """torch has no exclusion setting: parameter groups are the idiom. A group that sets
        weight_decay=0 is an exclusion, and names what it holds."""
        if len(self.optimizer.param_groups) < 2:
            return []
        names = {id(t): name for name, (t, _) in self._tensors.items()}
        settings = []
        for n, group in enumerate(self.optimizer.param_groups):
            if group.get("weight_decay", 0) == 0 and any(g.get("weight_decay", 0) for g in self.optimizer.param_groups):
                held = [names.get(id(p), "?") for p in group["params"]]
                settings.append(DecaySetting(setting=f"param_groups[{n}] weight_decay=0", names=[],
                                             excludes=held))
        return settings

    # ---------------------------------------------------------------- reading
    def values(self):
        for name, (tensor, _) in self._tensors.items():
            yield name, tensor.detach().cpu().numpy().copy()

    def _read(self) -> dict:
        grads = {}
        for name, (tensor, param) in self._tensors.items():
            if param.in_optimizer:
                grad = tensor.grad
                grads[name] = ("none", None) if grad is None else grad_state(grad.detach().cpu().numpy())
        training = self.model.training
        modes = {path: m.training for path, (m, _) in self._modules.items() if path and m.training != training}
        return {"grads": grads, "model_training": training, "modes": modes}

    def _at_update(self, optimizer, args, kwargs):
        # args: step()'s own, the optimizer first
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if closure is None:
            self._updates.append(self._read())
            return None
        # step(closure): the closure computes the gradients inside step() (Lightning's automatic optimization,
        # LBFGS), so they are read as it returns, before the update uses them; a closure called again in the
        # same step (LBFGS) leaves the last reading
        update = len(self._updates)

        def reading_closure(*a, **k):
            out = closure(*a, **k)
            del self._updates[update:]
            self._updates.append(self._read())
            return out
        if "closure" in kwargs:
            return args, {**kwargs, "closure": reading_closure}
        return (args[0], reading_closure, *args[2:]), kwargs

    def install(self) -> None:
        self._hook = self.optimizer.register_step_pre_hook(self._at_update)

    def uninstall(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def take_updates(self) -> list[dict]:
        updates, self._updates = self._updates, []
        return updates
