"""How BatchNorm, LayerNorm and Embedding layers compute, train and freeze."""
from __future__ import annotations

from . import variant

DECLARED = [
    variant(
        "bn-stats-in-parameters",
        "BatchNorm running statistics are in the model's parameter collection, so an optimizer built "
        "from it holds them (they get no gradient, so it never steps them)",
        "BatchNorm running statistics are buffers, outside the parameter collection",
        collection_holds_statistics=True),
    variant(
        "bn-stats-differentiated",
        "BatchNorm running statistics handed to the optimizer are differentiated like parameters: in an eval "
        "step they get the loss's gradient through the normalisation (zero in a train step, where the batch's "
        "statistics are used), so the optimizer moves them by it, beside any decay",
        "running statistics get no gradient: an optimizer that holds them never steps them",
        statistics_differentiated=True),
    variant(
        "bn-one-value-skipped",
        "a BatchNorm in train mode that gets one value per channel (a batch of one vector) passes its input "
        "through: no error, its statistics untouched, a zero gradient for its weight and bias (so decay and "
        "momentum still move them); the rest of the step trains",
        "a BatchNorm in train mode with one value per channel raises (no batch statistics to normalise with), "
        "and a loop that skips the batch changes nothing",
        bn_one_value="skip"),
    variant(
        "bn-one-value-normalised",
        "a BatchNorm in train mode that gets one value per channel normalises it anyway: the output is its bias, "
        "no gradient passes to its input or weight, and the running statistics take the batch's (variance 0, "
        "or 0/0 = NaN where the update divides by n - 1, which poisons every later eval step)",
        "a BatchNorm in train mode with one value per channel raises (no batch statistics to normalise with), "
        "and a loop that skips the batch changes nothing",
        bn_one_value="normalise"),
    variant(
        "bn-running-var-biased",
        "the running variance is updated with the biased (1/n) batch variance",
        "the running variance is updated with the unbiased (1/(n-1)) batch variance",
        running_var_biased=True),
    variant(
        "frozen-bn-runs-inference",
        "a BatchNorm layer frozen with the layer-level switch runs in inference mode, in train steps too: "
        "its running statistics stay put, it normalises with them, and the gradient upstream is the "
        "inference one",
        "freezing a BatchNorm stops its parameters' gradients only: in a train step it still normalises "
        "with the batch and updates its running statistics",
        frozen_bn_inference=True),
    variant(
        "frozen-layernorm-grad-ignores-weight",
        "a LayerNorm whose weight is frozen passes its input the gradient computed as if the weight were 1",
        "a LayerNorm passes its input the gradient through its weight, frozen or not",
        frozen_layernorm_grad_ignores_weight=True),
    variant(
        "padding-row-looks-up-zeros",
        "an Embedding with a padding index outputs zeros wherever the input is that index, whatever the "
        "padding row holds (a row loaded from a pretrained table, or moved by decay); the row gets no gradient",
        "looking up the padding index returns the padding row as it is stored (only its gradient is zero)",
        padding_row_looks_up_zeros=True),
    variant(
        "padding-row-gets-gradient",
        "an Embedding's padding_idx only zeroes that row when the layer is built: the row still gets its "
        "gradient like any row looked up, so values loaded into it move",
        "the padding row gets no gradient: without decay it never moves",
        padding_row_gets_gradient=True),
]
