"""Seed 3 (a MindSpore article) in paddle: a conv net whose conv1 is kept from training in three
ways. Each function is one audit target:

    python -m conformance audit examples/audit/paddle/seed3_frozen_conv.py:stop_gradient --framework paddle

- stop_gradient: conv1's output is detached (paddle's stop_gradient for a tensor). No gradient reaches
  conv1: the optimizer holds it and its gradient stays None (clear_grad() zero-fills only a gradient
  that exists), and SGD without decay leaves it in place (no-gradient).
- requires_grad_false: conv1.weight.stop_gradient = True (paddle's requires_grad=False; `trainable =
  False` sets the same flag), the optimizer built from all parameters. Its gradient stays None and
  paddle's step skips it: it stays put. No finding.
- freeze_after_warmup: conv1 trains for one step, then is frozen; the loop clears with clear_grad()
  (to zeros) before backward, as torch's port does, and the optimizer is Momentum. clear_grad() skips
  a frozen parameter (clear-skips-frozen), so conv1.weight keeps the warm-up step's gradient at every
  later update; yet paddle's step skips a parameter whose stop_gradient is True, gradient or not
  (step-skips-frozen), so neither that gradient nor the warm-up momentum moves it: no finding, where
  torch's port gives frozen-but-moved.
"""
import paddle
from paddle import nn


class ConvNet(nn.Layer):
    def __init__(self, detach=False):
        super().__init__()
        self.detach = detach
        self.conv1 = nn.Conv2D(1, 6, 4, bias_attr=False)
        self.conv2 = nn.Conv2D(6, 2, 2)
        self.conv3 = nn.Conv2D(2, 6, 2)

    def forward(self, x):
        x = self.conv1(x)
        if self.detach:
            x = x.detach()  # the tensor's stop_gradient
        return self.conv3(self.conv2(x))


def _target(model, optimizer):
    images = paddle.ones([1, 1, 32, 32])
    target = paddle.zeros([1, 6, 27, 27])

    def step():
        optimizer.clear_grad()
        ((model(images) - target) ** 2).mean().backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}


def stop_gradient():
    paddle.seed(0)
    model = ConvNet(detach=True)
    return _target(model, paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters()))


def requires_grad_false():
    paddle.seed(0)
    model = ConvNet()
    model.conv1.weight.stop_gradient = True
    return _target(model, paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters()))


def freeze_after_warmup():
    paddle.seed(0)
    model = ConvNet()
    optimizer = paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9, parameters=model.parameters())
    built = _target(model, optimizer)
    built["step"]()  # the warm-up step, conv1 still training
    model.conv1.weight.stop_gradient = True
    return built
